// Included second (-include) when one compiler run preprocesses several entry files: marks where
// each entry file's output starts (builder/kernels/preprocess.py splits the output here and drops
// this line). Not for a file run alone: GCC 12 stops with an internal error expanding
// __BASE_FILE__ for a file name holding a carriage return.
__metallib_builder_entry__ __BASE_FILE__
