package message

// SysFlag bits of a record and of a send (MessageSysFlag.java).
const (
	SysFlagCompressed       int32 = 0x1
	SysFlagMultiTags        int32 = 0x2
	TransactionNotType      int32 = 0x0
	TransactionPreparedType int32 = 0x4
	TransactionCommitType   int32 = 0x8
	TransactionRollbackType int32 = 0xC
	SysFlagBornHostV6       int32 = 0x10
	SysFlagStoreHostV6      int32 = 0x20
)

// Compression type bits of a compressed body (MessageSysFlag
// COMPRESSION_TYPE_COMPARATOR, CompressionType.java). Old clients leave the
// type bits 0, which means zlib.
const (
	SysFlagCompressionMask int32 = 0x700
	CompressionLZ4         int32 = 0x100
	CompressionZstd        int32 = 0x200
	CompressionZlib        int32 = 0x300
)

// TransactionType extracts the transaction bits (one of the Transaction*Type values).
func TransactionType(sysFlag int32) int32 { return sysFlag & TransactionRollbackType }
