// Package remoting speaks the RocketMQ 4.x "remoting" protocol: the frame
// codec for both header types, request and response codes, JSON bodies, a gnet
// server that runs handlers on a worker pool, and a client that pipelines
// requests over one connection per address.
//
// # Frame
//
// Every integer is big-endian. length counts everything after itself; a frame
// is at most MaxFrameSize (16 MiB) including the 4 bytes of length, and a peer
// that announces more, or less than 4, is disconnected before its body is read.
//
//	 0               4   5               8
//	+---------------+---+---------------+------------------+------------------+
//	| length        | T | H (24 bits)   | header (H bytes) | body             |
//	| = 4 + H + B   |   |               | JSON or ROCKETMQ | (B bytes)        |
//	+---------------+---+---------------+------------------+------------------+
//	                  T = serialize type: 0 JSON, 1 ROCKETMQ
//
// # JSON header (T = 0)
//
// One JSON object, written compact with keys in alphabetical order as
// fastjson does. extFields is omitted when the command has no custom header,
// remark when it is empty; all ext values are strings. Decoding accepts any
// key order, unknown keys, and "remark":null or "extFields":null.
//
//	{"code":105,                             request or response code
//	 "extFields":{"topic":"TopicTest"},      custom header, strings only
//	 "flag":0,                               bit 0 response, bit 1 oneway
//	 "language":"JAVA",                      LanguageCode enum name
//	 "opaque":3,                             request id, echoed by the reply
//	 "remark":"...",                         error text, omitted when empty
//	 "serializeTypeCurrentRPC":"JSON",       written for Java; ignored on read
//	 "version":409}                          MQVersion ordinal
//
// # ROCKETMQ header (T = 1)
//
// Fixed 21 bytes, then the remark and the ext block. A zero length means an
// empty remark or no ext fields. code is 16 bits wide: codes above 32767 do
// not survive this encoding (Java truncates them the same way).
//
//	 0       2    3       5               9              13              17
//	+-------+----+-------+---------------+---------------+---------------+
//	| code  |lang|version| opaque        | flag          | remark len R  |
//	| int16 |int8| int16 | int32         | int32         | int32         |
//	+-------+----+-------+---------------+---------------+---------------+
//	| remark (R bytes, UTF-8)            | ext len E     | ext (E bytes) |
//	+------------------------------------+---------------+---------------+
//
//	ext = repeated until E bytes are used:
//	+-----------+--------------+---------------+----------------+
//	| key len K | key (K)      | value len V   | value (V)      |
//	| int16     | UTF-8        | int32         | UTF-8          |
//	+-----------+--------------+---------------+----------------+
//
// Any length that is negative or reaches past its enclosing block is a
// malformed frame; the server closes such a connection, as Java's
// NettyDecoder does.
//
// # Requests and responses
//
// A response carries the request's opaque and has flag bit 0 set; it is
// written in the request's serialize type. Responses may leave in any order:
// peers match them by opaque. Requests with flag bit 1 (oneway) get no reply.
// When every worker is busy the server answers SYSTEM_BUSY (2) with the remark
// "[OVERLOAD]system busy, start flow control for a while". Codes on a lane
// (lanes.go: the stock broker's send, pull, heartbeat and end-transaction
// executors) wait for one of the lane's workers in a FIFO instead, timed
// from when the event loop decoded them, and get [OVERLOAD] only past the
// lane's capacity; the owner expires waiters that waited too long. An
// InlineHandler serves a lane's codes only while the lane is not full. A
// Handler that is a Rejecter refuses requests before they are served or
// queued, with SYSTEM_BUSY "[REJECTREQUEST]system busy, start flow control
// for a while".
//
// # Custom headers
//
// Each code's custom header (extFields) is a typed struct in headers*.go,
// named after 4.9.8's/5.x's *RequestHeader or *ResponseHeader class:
// DecodeHeader reads one (a missing required field or a bad number is an
// error that ErrorResponse turns into the stock SYSTEM_ERROR), Fields
// writes a request header for a sender and Encode a response header into a
// reply. Code outside this package never reads a field by name
// (internal/archtest TestNoLiteralHeaderReads); the send path's headers
// (broker/send.go) are the exception until they move here.
//
// # Connections
//
// The server closes a connection that sends no complete frame for
// ServerOptions.IdleTimeout (the stock serverChannelMaxIdleTimeSeconds, 120
// s), caps the open connections (MaxConns) and bounds the memory held for
// frames that have not arrived whole (MaxInflightBytes): such a frame holds
// what has arrived, not what its length announces, and past the bound the
// connection holding the most is closed. A frame that arrives in one read is
// decoded in place. hygiene.go has the details; ServerConfig carries these
// settings as config file keys.
package remoting
