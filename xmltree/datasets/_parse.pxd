# Declarations of the compiled parser behind the text readers of
# xmltree.datasets (XC repository, libsvm/svmlight, BoW pair files).
#
# The parser reads the body of a file (everything after an optional header
# line) held in memory as bytes. Every line ending in '\n' is exactly one row,
# so the 1-based line number of row r is `first_line + r`; a blank line is a
# row with no labels and no features. Python checks headers, shapes and id
# ranges afterwards; the parser only checks the syntax of each row.
#
# Each line's end is found first, by the parser itself, and the row is then
# parsed strictly inside it: no scan (and no C library routine) ever decides
# where a line ends. Inside a line only spaces and tabs separate tokens; a
# '\r' is allowed just before the '\n' (CRLF files), and any other control
# character is an error, since C routines such as strtof would skip '\v',
# '\f' and even '\n' as white space.

from .._kernels._types cimport float32_t, index_t, offset_t


# What went wrong in a row; the Python layer turns a code into a message.
cpdef enum ParseErrorCode:
    PARSE_OK = 0            # no problem
    BAD_LABEL_LIST = 1      # label list is not ids separated by single commas
    BAD_FEATURE_TOKEN = 2   # token is not `id:value`
    BAD_VALUE = 3           # text after `id:` is not a decimal number
    NON_FINITE_VALUE = 4    # value is NaN or infinite (or overflows float32)
    NEGATIVE_ID = 5         # a feature or label id starts with '-'
    ID_TOO_LARGE = 6        # an id does not fit in a 32-bit signed integer
    DUPLICATE_FEATURE = 7   # the same feature id appears twice in a row
    DUPLICATE_LABEL = 8     # the same label id appears twice in a row
    QID_TOKEN = 9           # a `qid:` ranking token (not supported)
    NO_FINAL_NEWLINE = 10   # the last line is not terminated (truncated file?)
    CONTROL_CHARACTER = 11  # a control byte other than a tab (or CR before LF) in a line


# Output buffers of one parse. The caller sizes them from delimiter counts
# of the same buffer, which bound what the parser can write.
cdef struct csr_rows:
    offset_t* feature_indptr    # row r's features are feature_indptr[r]:[r + 1]
    index_t* feature_indices    # feature ids, strictly increasing within a row
    float32_t* feature_values   # non-zero values, parallel to feature_indices
    offset_t* label_indptr      # row r's labels are label_indptr[r]:[r + 1]
    index_t* label_indices      # label ids, strictly increasing within a row
    offset_t n_rows             # rows completed so far
    offset_t n_feature_entries  # entries written to feature_indices so far
    offset_t n_label_entries    # entries written to label_indices so far


# Where and why parsing stopped; `code` stays PARSE_OK on success.
cdef struct parse_error:
    int code                    # a ParseErrorCode
    offset_t offset             # byte offset of the offending token (or byte)
    offset_t line               # 1-based line number of the offending token
    offset_t value              # the duplicate id, or the control byte


cdef offset_t parse_rows(const unsigned char* buf, offset_t start, offset_t end,
                         bint labels_first, offset_t first_line, csr_rows* out,
                         parse_error* error) noexcept nogil
