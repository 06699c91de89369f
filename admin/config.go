package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rmqio/rmq/remoting"
)

// BrokerConfig is one broker's configuration as GET_BROKER_CONFIG returns it.
type BrokerConfig struct {
	Addr string `json:"addr"`
	// Master is set for a slave: the master address of its group.
	Master     string            `json:"master,omitempty"`
	Properties map[string]string `json:"properties"`
}

// GetBrokerConfig fetches GET_BROKER_CONFIG from one broker. The body is a
// Java properties text ("key=value" lines).
func (a *Admin) GetBrokerConfig(ctx context.Context, addr string) (map[string]string, error) {
	req := newRequest(remoting.GetBrokerConfig, nil, nil)
	resp, err := a.callBroker(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	return ParseJavaProperties(string(resp.Body)), nil
}

// BrokerConfigs fetches the configuration of the broker at addr, or of every
// member of cluster: each master followed by its slaves. Members that fail
// are named in the returned error; the others are still returned.
func (a *Admin) BrokerConfigs(ctx context.Context, addr, cluster string) ([]BrokerConfig, error) {
	if addr != "" {
		p, err := a.GetBrokerConfig(ctx, addr)
		if err != nil {
			return nil, err
		}
		return []BrokerConfig{{Addr: addr, Properties: p}}, nil
	}
	ms, err := a.Members(ctx, cluster)
	if err != nil {
		return nil, err
	}
	masters := map[string]string{}
	for _, m := range ms {
		if m.BrokerID == 0 {
			masters[m.BrokerName] = m.Addr
		}
	}
	var out []BrokerConfig
	var errs []error
	for _, m := range ms {
		bc := BrokerConfig{Addr: m.Addr}
		if m.BrokerID != 0 {
			bc.Master = masters[m.BrokerName]
		}
		if bc.Properties, err = a.GetBrokerConfig(ctx, m.Addr); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, bc)
	}
	return out, errors.Join(errs...)
}

// PrintBrokerConfigs writes getBrokerConfig output; cluster selects the
// Master/Slave banners of the -c form.
func PrintBrokerConfigs(w io.Writer, cfgs []BrokerConfig, cluster bool) {
	for _, c := range cfgs {
		switch {
		case !cluster:
			fmt.Fprintf(w, "============%s============\n", c.Addr)
		case c.Master == "":
			fmt.Fprintf(w, "============Master: %s============\n", c.Addr)
		default:
			fmt.Fprintf(w, "============My Master: %s=====Slave: %s============\n", c.Master, c.Addr)
		}
		for _, k := range sortedKeys(c.Properties) {
			fmt.Fprintf(w, "%-50s=  %s\n", k, c.Properties[k])
		}
		fmt.Fprintf(w, "\n")
	}
}

// UpdateBrokerConfig sends UPDATE_BROKER_CONFIG with one key=value to the
// broker at addr or to every master of cluster, returning those updated.
func (a *Admin) UpdateBrokerConfig(ctx context.Context, addr, cluster, key, value string) ([]string, error) {
	if strings.ContainsAny(key, "=:\n") || key == "" {
		return nil, fmt.Errorf("%w: config key %q", ErrUsage, key)
	}
	return a.callMasters(ctx, addr, cluster, func() *remoting.Command {
		return newRequest(remoting.UpdateBrokerConfig, nil, []byte(key+"="+value+"\n"))
	})
}

// ParseJavaProperties reads java.util.Properties text: one entry per line,
// key and value split at the first '=' or ':', '#' and '!' comment lines,
// backslash escapes for the separators, \t, \n, \r and \\.
func ParseJavaProperties(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimLeft(strings.TrimRight(line, "\r"), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		var key strings.Builder
		i := 0
		for ; i < len(line); i++ {
			c := line[i]
			if c == '\\' && i+1 < len(line) {
				i++
				key.WriteByte(unescapeProperty(line[i]))
				continue
			}
			if c == '=' || c == ':' || c == ' ' || c == '\t' {
				break
			}
			key.WriteByte(c)
		}
		rest := strings.TrimLeft(line[i:], " \t\f")
		if rest != "" && (rest[0] == '=' || rest[0] == ':') {
			rest = strings.TrimLeft(rest[1:], " \t\f")
		}
		var val strings.Builder
		for j := 0; j < len(rest); j++ {
			if rest[j] == '\\' && j+1 < len(rest) {
				j++
				val.WriteByte(unescapeProperty(rest[j]))
				continue
			}
			val.WriteByte(rest[j])
		}
		out[key.String()] = val.String()
	}
	return out
}

func unescapeProperty(c byte) byte {
	switch c {
	case 't':
		return '\t'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 'f':
		return '\f'
	}
	return c
}
