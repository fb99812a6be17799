"""studies.kovaleva"""
