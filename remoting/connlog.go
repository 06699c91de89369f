package remoting

import "github.com/rs/zerolog"

// SetClientID records the client id the peer announced in a heartbeat, for
// log lines about this connection.
func (c *Conn) SetClientID(id string) {
	if id == "" {
		return
	}
	if old := c.clientID.Load(); old == nil || *old != id {
		c.clientID.Store(&id)
	}
}

// ClientID is the client id of the peer's last heartbeat, "" before one.
func (c *Conn) ClientID() string {
	if p := c.clientID.Load(); p != nil {
		return *p
	}
	return ""
}

// MarshalZerologObject writes the peer's address and client id; log lines
// about a client carry them as .Object("client", c):
//
//	"client":{"addr":"127.0.0.1:52814","id":"127.0.0.1@1234#..."}
func (c *Conn) MarshalZerologObject(e *zerolog.Event) {
	e.Str("addr", c.RemoteAddr())
	if id := c.ClientID(); id != "" {
		e.Str("id", id)
	}
}
