"""What a task run is made of.

Its arguments, resolved settings, target descriptors, seeds, sandbox and budget.
"""
