package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"rmq/conf"
	"rmq/remoting"
)

// runtimeConfig holds the options UPDATE_BROKER_CONFIG may change while the
// broker runs. A snapshot is never modified: an update stores a new one, so
// request handlers read b.runtime() without locks and see either the old or
// the new values, never a mix. Every other option is fixed at New (Options).
type runtimeConfig struct {
	BrokerPermission                  int32  `conf:"brokerPermission"`
	MaxTransferCountOnMessageInMemory int    `conf:"maxTransferCountOnMessageInMemory"`
	MaxTransferBytesOnMessageInMemory int    `conf:"maxTransferBytesOnMessageInMemory"`
	ShortPollingTimeMills             int    `conf:"shortPollingTimeMills"`
	LongPollingEnable                 bool   `conf:"longPollingEnable"`
	TraceOn                           bool   `conf:"traceOn"`
	RegionID                          string `conf:"regionId"`

	// version is the configuration's DataVersion: bumped by every update.
	version dataVersion
}

// dataVersion is Java's DataVersion as GET_BROKER_CONFIG reports it.
type dataVersion struct {
	Counter   int64 `json:"counter"`
	Timestamp int64 `json:"timestamp"`
}

func runtimeConfigFrom(o *Options, bootMs int64) *runtimeConfig {
	return &runtimeConfig{
		BrokerPermission:                  o.BrokerPermission,
		MaxTransferCountOnMessageInMemory: o.MaxTransferCountOnMessageInMemory,
		MaxTransferBytesOnMessageInMemory: o.MaxTransferBytesOnMessageInMemory,
		ShortPollingTimeMills:             o.ShortPollingTimeMills,
		LongPollingEnable:                 o.LongPollingEnable,
		TraceOn:                           o.TraceOn,
		RegionID:                          o.RegionID,
		version:                           dataVersion{Timestamp: bootMs},
	}
}

// applyTo copies the runtime values over o.
func (rc *runtimeConfig) applyTo(o *Options) {
	o.BrokerPermission = rc.BrokerPermission
	o.MaxTransferCountOnMessageInMemory = rc.MaxTransferCountOnMessageInMemory
	o.MaxTransferBytesOnMessageInMemory = rc.MaxTransferBytesOnMessageInMemory
	o.ShortPollingTimeMills = rc.ShortPollingTimeMills
	o.LongPollingEnable = rc.LongPollingEnable
	o.TraceOn = rc.TraceOn
	o.RegionID = rc.RegionID
}

// validate refuses values the broker cannot run with.
func (rc *runtimeConfig) validate() error {
	switch {
	case rc.BrokerPermission&^(remoting.PermRead|remoting.PermWrite|remoting.PermInherit) != 0:
		return fmt.Errorf("brokerPermission %d is not a combination of 1 (inherit), 2 (write) and 4 (read)", rc.BrokerPermission)
	case rc.MaxTransferCountOnMessageInMemory <= 0:
		return fmt.Errorf("maxTransferCountOnMessageInMemory %d must be positive", rc.MaxTransferCountOnMessageInMemory)
	case rc.MaxTransferBytesOnMessageInMemory <= 0:
		return fmt.Errorf("maxTransferBytesOnMessageInMemory %d must be positive", rc.MaxTransferBytesOnMessageInMemory)
	case rc.ShortPollingTimeMills <= 0:
		return fmt.Errorf("shortPollingTimeMills %d must be positive", rc.ShortPollingTimeMills)
	}
	return nil
}

// runtimeKeys lists the keys UPDATE_BROKER_CONFIG accepts, in declaration order.
var runtimeKeys = conf.Keys(&runtimeConfig{})

// configUpdateMu serialises UPDATE_BROKER_CONFIG read-modify-write cycles.
var configUpdateMu sync.Mutex

// runtime returns the current runtime-changeable options.
func (b *Broker) runtime() *runtimeConfig {
	if rc := b.live.Load(); rc != nil {
		return rc
	}
	b.live.CompareAndSwap(nil, runtimeConfigFrom(&b.opts, b.clock.Now().UnixMilli()))
	return b.live.Load()
}

// effectiveOptions is Options with the runtime values in force.
func (b *Broker) effectiveOptions() Options {
	o := b.opts
	b.runtime().applyTo(&o)
	return o
}

// processGetBrokerConfig serves GET_BROKER_CONFIG: every option as Java
// properties lines ("key=value\n", escaped so that Properties.load reads the
// values back), and the configuration's data version in the header.
func (b *Broker) processGetBrokerConfig(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	o := b.effectiveOptions()
	var body bytes.Buffer
	conf.Print(&body, &o)
	v, err := json.Marshal(b.runtime().version)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.SetExt("version", string(v))
	resp.Body = body.Bytes()
	return resp
}

// processUpdateBrokerConfig serves UPDATE_BROKER_CONFIG. The body is Java
// properties text. Only the keys of runtimeConfig can change while the broker
// runs; a request naming any other key (or an unparsable or invalid value)
// changes nothing and is refused with a remark that says why. Changes last
// until the broker stops: like the stock broker, which writes them to a file
// it never reads back, the next start takes the config file and flags again.
// A permission change is registered with the name servers at once.
func (b *Broker) processUpdateBrokerConfig(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	keys := propertyKeys(req.Body)
	if len(keys) == 0 {
		return remoting.NewResponse(req, remoting.SystemError, "updateBrokerConfig: the body holds no key=value line")
	}
	var refused []string
	for _, k := range keys {
		if !slices.Contains(runtimeKeys, k) {
			refused = append(refused, k)
		}
	}
	if len(refused) > 0 {
		return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf(
			"updateBrokerConfig: %s cannot be changed while the broker runs (set it in the config file and restart); runtime-changeable keys: %s",
			strings.Join(refused, ", "), strings.Join(runtimeKeys, ", ")))
	}

	configUpdateMu.Lock()
	defer configUpdateMu.Unlock()
	cur := b.runtime()
	next := *cur
	if _, err := conf.Load(bytes.NewReader(req.Body), "updateBrokerConfig", &next); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	if err := next.validate(); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "updateBrokerConfig: "+err.Error())
	}
	next.version = dataVersion{Counter: cur.version.Counter + 1, Timestamp: b.clock.Now().UnixMilli()}
	b.live.Store(&next)
	b.log.Info().Object("client", c).Strs("keys", keys).Msg("broker config updated")
	if next.BrokerPermission != cur.BrokerPermission {
		b.registerAsync()
	}
	return remoting.NewResponse(req, remoting.Success, "")
}

// propertyKeys lists the keys of a Java properties text in order: per
// non-blank line that is not a comment, the text up to the first unescaped
// '=', ':' or blank. Continuation lines (after a trailing backslash) belong
// to their key's value.
func propertyKeys(body []byte) []string {
	var keys []string
	continued := false
	for _, line := range strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n") {
		wasContinued := continued
		continued = trailingBackslashes(line)%2 == 1
		if wasContinued {
			continue
		}
		line = strings.TrimLeft(line, " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continued = false
			continue
		}
		end := len(line)
		for i := 0; i < len(line); i++ {
			if line[i] == '\\' {
				i++
				continue
			}
			if strings.IndexByte("=: \t\f", line[i]) >= 0 {
				end = i
				break
			}
		}
		if k := line[:end]; k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}
