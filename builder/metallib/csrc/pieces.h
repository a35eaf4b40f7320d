/* The pieces a function owns, in file order: its function-list entry, then one piece in each of
 * the sections that follow. The same numbers as builder/metallib/table.py's Piece; a test
 * (tests/metallib/test_native_contract.py) reads this file and compares. */
#ifndef METALLIB_PIECES_H
#define METALLIB_PIECES_H

enum Piece {
    PIECE_ENTRY = 0,
    PIECE_PUBLIC_MD = 1,
    PIECE_PRIVATE_MD = 2,
    PIECE_MODULE = 3,
    PIECE_REFLECTION = 4,
    PIECES = 5
};

#endif
