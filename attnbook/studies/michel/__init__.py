"""studies.michel"""
