"""The records a build leaves for later commands to read: ``manifest.json`` (which kernel came
from which unit, how each JIT unit was embedded)."""
