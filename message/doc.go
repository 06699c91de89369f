// Package message is the message model and wire vocabulary shared by the
// store, the broker, the delay-level and timer services and the admin tools:
// the commitlog message record (which is also the body of pull, query and view
// replies), the properties text, offset message ids, SEND_BATCH_MESSAGE
// bodies, the consume-queue tag hash, sysFlag bits, property keys
// (MessageConst.java) and system topic names (TopicValidator.java,
// MixAll.java). It imports no other package of this module.
//
// # Message record (v1, IPv4 hosts; big-endian)
//
// MessageDecoder.java (decode, createMessageId), CommitLog.java
// (MessageExtEncoder, checkMessageAndReturnSize):
//
//	 0 +-----------------------+
//	   | TOTALSIZE      int32  |  whole record, this field included
//	 4 | MAGICCODE      int32  |  0xDAA320A7 (v1)
//	 8 | BODYCRC        int32  |  CRC-32 IEEE of BODY & 0x7FFFFFFF
//	12 | QUEUEID        int32  |
//	16 | FLAG           int32  |
//	20 | QUEUEOFFSET    int64  |  index in the consume queue (0 for prepared/rollback)
//	28 | PHYSICALOFFSET int64  |  this record's own commitlog offset
//	36 | SYSFLAG        int32  |  0x10/0x20: born/store host is IPv6 (20 bytes)
//	40 | BORNTIMESTAMP  int64  |
//	48 | BORNHOST   4+4 bytes  |  IPv4 + int32 port
//	56 | STORETIMESTAMP int64  |  clock under the store's put lock
//	64 | STOREHOST  4+4 bytes  |  the broker's registered address
//	72 | RECONSUMETIMES int32  |
//	76 | PREPARED_TX_OFF int64 |
//	84 | BODY   int32 len + n  |
//	   | TOPIC  int8 len + n   |  (v2 0xDAA320AB: int16 length, written for topics > 127 bytes)
//	   | PROPS  int16 len + n  |  properties text (below), at most 32767 bytes
//	   +-----------------------+  TOTALSIZE = 91 + body + topic + props
//
// With an IPv6 born or store host that host takes 16+4 bytes and every later
// field moves by 12; Layout holds the positions of one record.
//
// SYSFLAG (MessageSysFlag.java):
//
//	bit 0      0x1    body compressed (InflateBody)
//	bit 1      0x2    multi tags
//	bits 2-3   0xC    transaction: 0x0 not, 0x4 prepared, 0x8 commit, 0xC rollback
//	bit 4      0x10   born host IPv6
//	bit 5      0x20   store host IPv6
//	bits 8-10  0x700  compression type: 0x100 LZ4, 0x200 zstd, 0x300 zlib (0: zlib)
//
// # Properties text
//
// MessageDecoder.messageProperties2String / string2messageProperties:
//
//	+------+----+-------+----+------+----+-------+
//	| name | 01 | value | 02 | name | 01 | value |   Java 4.9.x: no trailing 02
//	+------+----+-------+----+------+----+-------+   Go, 5.x: a 02 after every pair
//
// A pair with an empty name or value is dropped on reading, and so is a
// segment without 01; a value may contain 01 (the first 01 splits); a later
// duplicate wins. MarshalProperties writes the Java form with the names
// sorted, so equal maps give equal bytes.
//
// # Offset message id (msgId of a stored record, "offsetMsgId")
//
// MessageDecoder.createMessageId / decodeMessageId, upper-case hex:
//
//	IPv4: +----------------+--------------+---------------------------+   32 hex characters
//	      | store IP  4 B  | port int32   | commitlog offset  int64   |
//	      +----------------+--------------+---------------------------+
//	IPv6: the IP takes 16 bytes                                           56 hex characters
//
// The client id (PropUniqKey) is a different, opaque id.
//
// # SEND_BATCH_MESSAGE body
//
// MessageDecoder.encodeMessages; one entry per message, concatenated:
//
//	 0 +-----------------------+
//	   | TOTALSIZE      int32  |  = 22 + body + props
//	 4 | MAGICCODE      int32  |  ignored (clients send 0)
//	 8 | BODYCRC        int32  |  ignored
//	12 | FLAG           int32  |
//	16 | BODY   int32 len + n  |
//	   | PROPS  int16 len + n  |  properties text of this message
//	   +-----------------------+
//
// # Tags hash
//
// The consume-queue tagsCode of an ordinary message is Java
// String.hashCode of its TAGS (MessageExtBrokerInner.tagsString2tagsCode),
// computed by TagsHash.
package message
