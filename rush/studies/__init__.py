"""Research studies: each reproduces a published result on the simulator (sweeps, tables, reports).

The command line's ``rush experiment ...`` modules are thin wrappers around these.
"""
