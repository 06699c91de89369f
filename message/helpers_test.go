package message

import "net/netip"

var (
	testStoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	testBornHost  = netip.MustParseAddrPort("10.0.0.7:53211")
)
