"""Writing subsets of a library: ``slim``, and the AOT/JIT splits ``variants --from`` plans and
writes.

Modules here read measurements from ``builder.size`` and write new metallibs and JIT sources;
``size`` never imports them.
"""
