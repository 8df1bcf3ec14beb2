"""
Placeholder
===========

x
"""
print(1)
