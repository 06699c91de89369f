package remoting

// HARuntimeInfo is the body of GET_BROKER_HA_STATUS (5.3.3
// remoting/protocol/body/HARuntimeInfo). Its fields are declared in the
// order fastjson writes them (getters, alphabetical), so MarshalBody gives
// the stock bytes; HAClientRuntimeInfo's isActivated has no getter and is
// never written. masterAddr is null (left out) on a master.
type HARuntimeInfo struct {
	HAClientRuntimeInfo      HAClientRuntimeInfo       `json:"haClientRuntimeInfo"`
	HAConnectionInfo         []HAConnectionRuntimeInfo `json:"haConnectionInfo"`
	InSyncSlaveNums          int32                     `json:"inSyncSlaveNums"`
	Master                   bool                      `json:"master"`
	MasterCommitLogMaxOffset int64                     `json:"masterCommitLogMaxOffset"`
}

// HAConnectionRuntimeInfo is one slave connection on a master.
type HAConnectionRuntimeInfo struct {
	Addr                    string `json:"addr"`
	Diff                    int64  `json:"diff"`
	InSync                  bool   `json:"inSync"`
	SlaveAckOffset          int64  `json:"slaveAckOffset"`
	TransferFromWhere       int64  `json:"transferFromWhere"`
	TransferredByteInSecond int64  `json:"transferredByteInSecond"`
}

// HAClientRuntimeInfo is a slave's HA client.
type HAClientRuntimeInfo struct {
	LastReadTimestamp       int64  `json:"lastReadTimestamp"`
	LastWriteTimestamp      int64  `json:"lastWriteTimestamp"`
	MasterAddr              string `json:"masterAddr,omitempty"`
	MasterFlushOffset       int64  `json:"masterFlushOffset"`
	MaxOffset               int64  `json:"maxOffset"`
	TransferredByteInSecond int64  `json:"transferredByteInSecond"`
}
