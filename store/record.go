package store

// BlankMagicCode marks the BLANK record that fills the end of a commitlog
// file (CommitLog.BLANK_MAGIC_CODE, -875286124). Message records and their
// magic codes are package message's.
const BlankMagicCode uint32 = 0xCBD43194

// blankRecordLength is the END_FILE_MIN_BLANK_LENGTH: a file always keeps room
// for the 8-byte BLANK header (TOTALSIZE + BLANK magic) after its last record.
const blankRecordLength = 8
