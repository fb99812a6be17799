"""studies.niven_kao"""
