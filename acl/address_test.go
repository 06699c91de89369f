package acl

import "testing"

// Every expectation here is what the 4.9.8 RemoteAddressStrategyFactory
// gives for the same pattern and address ("*.1.1.1" loads there and fails
// each match with a NullPointerException; rmq refuses it at load).
func TestAddressPatterns(t *testing.T) {
	cases := []struct {
		pattern string
		yes, no []string
	}{
		{"", nil, []string{"127.0.0.1"}},
		{"*", []string{"127.0.0.1", "::1"}, nil},
		{"*.*.*.*", []string{"10.1.2.3"}, nil},
		{"192.168.0.*", []string{"192.168.0.1", "192.168.0.255"}, []string{"192.168.1.1", "10.168.0.1"}},
		{"192.168.*.*", []string{"192.168.7.9"}, []string{"192.169.0.1"}},
		{"10.*.*.*", []string{"10.0.0.1", "10.255.1.1"}, []string{"11.0.0.1"}},
		{"192.168.1.1-100", []string{"192.168.1.1", "192.168.1.100"}, []string{"192.168.1.101", "192.168.1.0"}},
		{"192.168.1.1", []string{"192.168.1.1"}, []string{"192.168.1.10"}},
		{"192.168.1.1,192.168.1.2", []string{"192.168.1.2"}, []string{"192.168.1.3"}},
		{"192.168.1.{1,2,3}", []string{"192.168.1.1", "192.168.1.3"}, []string{"192.168.1.4", "192.168.1.12"}},
		{"::1", []string{"0:0:0:0:0:0:0:1", "::1"}, []string{"::2"}},
		{"1:2:3:4:5:6:7:*", []string{"1:2:3:4:5:6:7:ffff"}, []string{"1:2:3:4:5:6:8:1", "1.2.3.4"}},
		{"1:2:3:4:5:6:7:1-ff", []string{"1:2:3:4:5:6:7:10"}, []string{"1:2:3:4:5:6:7:100"}},
		{"1:2:3:4:5:6:7:{1,2}", []string{"1:2:3:4:5:6:7:2"}, []string{"1:2:3:4:5:6:7:3"}},
	}
	for _, c := range cases {
		m, err := parseAddress(c.pattern)
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		for _, ip := range c.yes {
			if !m.match(ip) {
				t.Errorf("%q does not match %s", c.pattern, ip)
			}
		}
		for _, ip := range c.no {
			if m.match(ip) {
				t.Errorf("%q matches %s", c.pattern, ip)
			}
		}
	}
}

func TestAddressPatternsRefused(t *testing.T) {
	for _, p := range []string{
		"192.168.1.256", "abc", "192.168.1.-5", "192.168.1.9-2", "192.168.1.1-300",
		"192.168.{1,2}", "192.168.1.{1,x}", "192.168.1.1, 192.168.1.2", "*.1.1.1", "1:2:*:4",
	} {
		if _, err := parseAddress(p); err == nil {
			t.Errorf("%q loaded, want an error", p)
		}
	}
}

func TestClientIP(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:5000":         "127.0.0.1",
		"[::ffff:10.0.0.1]:5000": "10.0.0.1",
		"[::1]:80":               "::1",
		"no-port":                "no-port",
	} {
		if got := clientIP(in); got != want {
			t.Errorf("clientIP(%q) = %q, want %q", in, got, want)
		}
	}
}
