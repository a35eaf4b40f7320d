"""Publishing: the outputs a command sends out of the process.

Files named with ``-o`` (several per run, the format from each extension), the GitHub step summary
(written once per run) and the sticky pull-request comment (the GitHub REST API, standard library
only). Presentation (``builder.render``) makes the text; this package only delivers it.
"""
