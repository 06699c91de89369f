package admin

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rmqio/rmq/remoting"
)

// NamesrvConfig is one name server's config (GET_NAMESRV_CONFIG).
type NamesrvConfig struct {
	Addr   string            `json:"addr"`
	Config map[string]string `json:"config"`
}

// GetNamesrvConfig is mqadmin getNamesrvConfig: GET_NAMESRV_CONFIG from each
// name server.
func (a *Admin) GetNamesrvConfig(ctx context.Context) ([]NamesrvConfig, error) {
	if len(a.namesrv) == 0 {
		return nil, ErrNoNamesrv
	}
	var out []NamesrvConfig
	for _, addr := range a.namesrv {
		resp, err := a.call(ctx, roleNamesrv, addr, newRequest(remoting.GetNamesrvConfig, nil, nil))
		if err != nil {
			return nil, err
		}
		out = append(out, NamesrvConfig{Addr: addr, Config: ParseJavaProperties(string(resp.Body))})
	}
	return out, nil
}

// PrintNamesrvConfigs writes getNamesrvConfig output.
func PrintNamesrvConfigs(w io.Writer, cfgs []NamesrvConfig) {
	for _, c := range cfgs {
		fmt.Fprintf(w, "============%s============\n", c.Addr)
		keys := make([]string, 0, len(c.Config))
		for k := range c.Config {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "%-50s=  %s\n", k, c.Config[k])
		}
	}
}

// UpdateNamesrvConfig is mqadmin updateNamesrvConfig: UPDATE_NAMESRV_CONFIG
// with key=value on each name server.
func (a *Admin) UpdateNamesrvConfig(ctx context.Context, key, value string) error {
	if len(a.namesrv) == 0 {
		return ErrNoNamesrv
	}
	if strings.ContainsAny(key, "=:\n") || key == "" {
		return fmt.Errorf("%w: config key %q", ErrUsage, key)
	}
	body := []byte(key + "=" + value + "\n")
	for _, addr := range a.namesrv {
		if _, err := a.call(ctx, roleNamesrv, addr, newRequest(remoting.UpdateNamesrvConfig, nil, body)); err != nil {
			return err
		}
	}
	return nil
}
