"""studies.clark"""
