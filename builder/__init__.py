"""metallib-builder: build, measure, compare, verify and slim Metal kernel libraries."""

__version__ = "0.1.0"
