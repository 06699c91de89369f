package autoswitch

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// State is the HAConnectionState ordinal every AutoSwitch frame starts
// with (5.3.3 store/ha/HAConnectionState.java).
type State int32

// The states, in their Java declaration order.
const (
	StateReady State = iota
	StateHandshake
	StateTransfer
	StateSuspend
	StateShutdown
)

func (s State) String() string {
	switch s {
	case StateReady:
		return "READY"
	case StateHandshake:
		return "HANDSHAKE"
	case StateTransfer:
		return "TRANSFER"
	case StateSuspend:
		return "SUSPEND"
	case StateShutdown:
		return "SHUTDOWN"
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// Frame sizes (AutoSwitchHAClient.java:68, :103; AutoSwitchHAConnection.java
// :56, :71-72) and limits.
const (
	// SlaveHandshakeSize: int state, short isSyncFromLastFile, short
	// isAsyncLearner, int64 slave broker id.
	SlaveHandshakeSize = 4 + 2 + 2 + 8
	// SlaveReportSize: int state, int64 slave max offset.
	SlaveReportSize = 4 + 8
	// MasterHandshakeHeaderSize: int state, int body size, int64 master
	// max offset, int last epoch; the body is the epoch entries.
	MasterHandshakeHeaderSize = 4 + 4 + 8 + 4
	// TransferHeaderSize: the handshake header's fields, then int64 epoch
	// start offset and int64 confirm offset; the body is commitlog bytes.
	TransferHeaderSize = MasterHandshakeHeaderSize + 8 + 8
	// EpochEntrySize: int epoch, int64 start offset.
	EpochEntrySize = 4 + 8
	// MaxHandshakeEntries: the master's handshake buffer holds 1000
	// entries (Conn :450); more would overflow it.
	MaxHandshakeEntries = 1000
	// MaxTransferBody: the stock slave's read buffer is 4 MiB
	// (AutoSwitchHAClient READ_MAX_BUFFER_SIZE, :106) and must hold the
	// header and the body, so a larger body never completes there.
	MaxTransferBody = 4<<20 - TransferHeaderSize
)

// ErrFrame is a frame the reader refuses: an unknown or unexpected state,
// a negative or oversize body, an epoch body that is not whole entries.
// The connection is closed.
var ErrFrame = errors.New("autoswitch: bad HA frame")

// SlaveHandshake is the slave's first frame (sendHandshakeHeader,
// AutoSwitchHAClient.java:290-306).
type SlaveHandshake struct {
	SyncFromLastFile bool
	AsyncLearner     bool
	BrokerID         int64
}

// AppendSlaveHandshake appends h's frame to b.
func AppendSlaveHandshake(b []byte, h SlaveHandshake) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(StateHandshake))
	b = binary.BigEndian.AppendUint16(b, flag(h.SyncFromLastFile))
	b = binary.BigEndian.AppendUint16(b, flag(h.AsyncLearner))
	return binary.BigEndian.AppendUint64(b, uint64(h.BrokerID))
}

func flag(v bool) uint16 {
	if v {
		return 1
	}
	return 0
}

// AppendSlaveReport appends the slave's TRANSFER report of its max offset
// (reportSlaveOffset, :322-329).
func AppendSlaveReport(b []byte, maxOffset int64) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(StateTransfer))
	return binary.BigEndian.AppendUint64(b, uint64(maxOffset))
}

// MasterHandshake is the master's reply: its epoch table and max offset
// (buildHandshakeBuffer, AutoSwitchHAConnection.java:476-504).
type MasterHandshake struct {
	MaxOffset int64
	LastEpoch int32 // -1 for an empty table
	// Entries carry Epoch and StartOffset; EndOffset is not on the wire
	// (decoded as 0: NewEpochTable derives it).
	Entries []EpochEntry
}

// AppendMasterHandshake appends h's frame to b; the state field is
// HANDSHAKE, the master's state once the slave's handshake is read. More
// than MaxHandshakeEntries entries is an ErrFrame (stock would overflow its
// buffer).
func AppendMasterHandshake(b []byte, h MasterHandshake) ([]byte, error) {
	if len(h.Entries) > MaxHandshakeEntries {
		return b, fmt.Errorf("%w: %d epoch entries, at most %d", ErrFrame, len(h.Entries), MaxHandshakeEntries)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(StateHandshake))
	b = binary.BigEndian.AppendUint32(b, uint32(len(h.Entries)*EpochEntrySize))
	b = binary.BigEndian.AppendUint64(b, uint64(h.MaxOffset))
	b = binary.BigEndian.AppendUint32(b, uint32(h.LastEpoch))
	for _, e := range h.Entries {
		b = binary.BigEndian.AppendUint32(b, uint32(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.StartOffset))
	}
	return b, nil
}

// TransferHeader heads a chunk of commitlog (or a heartbeat, with no body)
// (buildTransferHeaderBuffer, :519-553).
type TransferHeader struct {
	BodySize         int32
	Offset           int64 // where the body starts in the commitlog
	Epoch            int32 // the epoch the body was written in
	EpochStartOffset int64
	ConfirmOffset    int64
}

// AppendTransferHeader appends h (state TRANSFER) to b; the body follows
// it on the wire. A BodySize outside [0, MaxTransferBody] is an ErrFrame.
func AppendTransferHeader(b []byte, h TransferHeader) ([]byte, error) {
	if h.BodySize < 0 || h.BodySize > MaxTransferBody {
		return b, fmt.Errorf("%w: body of %d bytes", ErrFrame, h.BodySize)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(StateTransfer))
	b = binary.BigEndian.AppendUint32(b, uint32(h.BodySize))
	b = binary.BigEndian.AppendUint64(b, uint64(h.Offset))
	b = binary.BigEndian.AppendUint32(b, uint32(h.Epoch))
	b = binary.BigEndian.AppendUint64(b, uint64(h.EpochStartOffset))
	return binary.BigEndian.AppendUint64(b, uint64(h.ConfirmOffset)), nil
}

// SlaveFrame is one decoded slave→master frame: a handshake (State
// HANDSHAKE) or a report (State TRANSFER, MaxOffset set).
type SlaveFrame struct {
	State     State
	Handshake SlaveHandshake
	MaxOffset int64
}

// SlaveDecoder decodes the slave→master stream incrementally, as the
// master's HAServerReader does (AutoSwitchHAConnection.java:304-362): the
// first int picks the frame, HANDSHAKE (16 B) or TRANSFER (12 B); any
// other state closes the connection (:350-352). It buffers at most one
// frame.
type SlaveDecoder struct {
	buf [SlaveHandshakeSize]byte
	n   int
}

// Feed consumes bytes from p and returns the frames they complete. The
// frames are appended to out, which is returned; the bytes of an
// unfinished frame are kept for the next call. After an ErrFrame the
// decoder must not be used again.
func (d *SlaveDecoder) Feed(out []SlaveFrame, p []byte) ([]SlaveFrame, error) {
	for len(p) > 0 {
		need := 4
		if d.n >= 4 {
			switch State(binary.BigEndian.Uint32(d.buf[:4])) {
			case StateHandshake:
				need = SlaveHandshakeSize
			case StateTransfer:
				need = SlaveReportSize
			default:
				return out, fmt.Errorf("%w: slave state %d", ErrFrame, int32(binary.BigEndian.Uint32(d.buf[:4])))
			}
		}
		c := copy(d.buf[d.n:need], p)
		d.n += c
		p = p[c:]
		if d.n < need || need == 4 {
			continue
		}
		out = append(out, decodeSlaveFrame(d.buf[:need]))
		d.n = 0
	}
	if d.n >= 4 {
		if s := State(binary.BigEndian.Uint32(d.buf[:4])); s != StateHandshake && s != StateTransfer {
			return out, fmt.Errorf("%w: slave state %d", ErrFrame, int32(s))
		}
	}
	return out, nil
}

func decodeSlaveFrame(b []byte) SlaveFrame {
	f := SlaveFrame{State: State(binary.BigEndian.Uint32(b))}
	if f.State == StateHandshake {
		// Java sets a flag only when the short is exactly 1 (:322, :327).
		f.Handshake.SyncFromLastFile = binary.BigEndian.Uint16(b[4:]) == 1
		f.Handshake.AsyncLearner = binary.BigEndian.Uint16(b[6:]) == 1
		f.Handshake.BrokerID = int64(binary.BigEndian.Uint64(b[8:]))
		return f
	}
	f.MaxOffset = int64(binary.BigEndian.Uint64(b[4:]))
	return f
}

// MasterFrame is one decoded master→slave frame: a handshake (State
// HANDSHAKE, Handshake set) or a transfer chunk (State TRANSFER, Transfer
// and Body set).
type MasterFrame struct {
	State     State
	Handshake MasterHandshake
	Transfer  TransferHeader
	// Body is the chunk's commitlog bytes; it aliases the decoder's buffer
	// and is valid until the next Feed.
	Body []byte
}

// MasterDecoder decodes the master→slave stream incrementally, as the
// slave's HAClientReader does (AutoSwitchHAClient.java:481-580): a
// HANDSHAKE frame is the 20 B header and body/12 epoch entries, a TRANSFER
// frame the 36 B header and its body. Any other state, a negative body, an
// epoch body above MaxHandshakeEntries entries or not a multiple of 12, or
// a transfer body above MaxBody closes the connection. Its buffer grows to
// the largest frame seen, at most the header and MaxBody.
type MasterDecoder struct {
	// MaxBody bounds a transfer body; 0 (or more than MaxTransferBody)
	// means MaxTransferBody.
	MaxBody int32

	buf  []byte
	done int // bytes of buf handed out in frames of the last Feed
}

// Feed consumes p and appends the frames it completes to out. Bodies of
// the returned frames alias the decoder's buffer until the next Feed.
// After an ErrFrame the decoder must not be used again.
func (d *MasterDecoder) Feed(out []MasterFrame, p []byte) ([]MasterFrame, error) {
	if d.done > 0 {
		d.buf = d.buf[:copy(d.buf, d.buf[d.done:])]
		d.done = 0
	}
	// Frames handed out alias buf, so bytes are only ever appended after
	// them (a buffer that must grow is replaced, leaving the old one to
	// the frames that point into it), and only as many as the frame in
	// progress needs.
	for {
		rest := d.buf[d.done:]
		size, err := d.frameSize(rest)
		if err != nil {
			return out, err
		}
		if size > 0 && size <= len(rest) {
			out = append(out, decodeMasterFrame(rest[:size]))
			d.done += size
			continue
		}
		if len(p) == 0 {
			return out, nil
		}
		want := size
		if size == 0 { // the body size is not in yet: read the smaller header
			want = MasterHandshakeHeaderSize
		}
		if cap(d.buf)-d.done < want {
			nb := make([]byte, len(rest), max(want, min(2*cap(d.buf), TransferHeaderSize+int(d.maxBody()))))
			copy(nb, rest)
			d.buf, d.done = nb, 0
		}
		c := min(want-len(rest), len(p))
		d.buf = append(d.buf, p[:c]...)
		p = p[c:]
	}
}

func (d *MasterDecoder) maxBody() int32 {
	if d.MaxBody <= 0 || d.MaxBody > MaxTransferBody {
		return MaxTransferBody
	}
	return d.MaxBody
}

// frameSize is the full size of the frame b starts, or 0 when b does not
// yet hold enough of the header to tell.
func (d *MasterDecoder) frameSize(b []byte) (int, error) {
	if len(b) < 4 {
		return 0, nil
	}
	state := State(binary.BigEndian.Uint32(b))
	if state != StateHandshake && state != StateTransfer {
		return 0, fmt.Errorf("%w: master state %d", ErrFrame, int32(state))
	}
	if len(b) < 8 {
		return 0, nil
	}
	body := int32(binary.BigEndian.Uint32(b[4:]))
	if state == StateHandshake {
		if body < 0 || body%EpochEntrySize != 0 || body > MaxHandshakeEntries*EpochEntrySize {
			return 0, fmt.Errorf("%w: handshake body of %d bytes", ErrFrame, body)
		}
		return MasterHandshakeHeaderSize + int(body), nil
	}
	maxBody := d.maxBody()
	if body < 0 || body > maxBody {
		return 0, fmt.Errorf("%w: transfer body of %d bytes (at most %d)", ErrFrame, body, maxBody)
	}
	return TransferHeaderSize + int(body), nil
}

func decodeMasterFrame(b []byte) MasterFrame {
	f := MasterFrame{State: State(binary.BigEndian.Uint32(b))}
	body := int32(binary.BigEndian.Uint32(b[4:]))
	if f.State == StateHandshake {
		h := &f.Handshake
		h.MaxOffset = int64(binary.BigEndian.Uint64(b[8:]))
		h.LastEpoch = int32(binary.BigEndian.Uint32(b[16:]))
		for e := b[MasterHandshakeHeaderSize:]; len(e) >= EpochEntrySize; e = e[EpochEntrySize:] {
			h.Entries = append(h.Entries, EpochEntry{
				Epoch:       int32(binary.BigEndian.Uint32(e)),
				StartOffset: int64(binary.BigEndian.Uint64(e[4:])),
			})
		}
		return f
	}
	f.Transfer = TransferHeader{
		BodySize:         body,
		Offset:           int64(binary.BigEndian.Uint64(b[8:])),
		Epoch:            int32(binary.BigEndian.Uint32(b[16:])),
		EpochStartOffset: int64(binary.BigEndian.Uint64(b[20:])),
		ConfirmOffset:    int64(binary.BigEndian.Uint64(b[28:])),
	}
	f.Body = b[TransferHeaderSize:]
	return f
}
