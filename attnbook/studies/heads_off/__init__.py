"""studies.heads_off"""
