"""Files in and out: bounded reading of untrusted input (``bounds``), crash-safe writes
(``atomic``, ``temporaries``, ``output_folder``), one run per folder (``locks``), and JSON text
valid for any file name (``dataclass_json``)."""
