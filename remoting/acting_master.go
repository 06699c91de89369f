package remoting

import (
	"strconv"

	"github.com/rmqio/rmq/internal/fastjson"
)

// Slave-acting-master (5.3.3, RIP-32; docs/cn/SlaveActingMasterMode.md):
// the name server answers a group's members (901) and takes the brokers'
// heartbeats (904, BrokerHeartbeat in codes_controller.go), and tells the
// brokers of a group when its minimum broker id changed (905). A slave
// asks its master for its HA address with EXCHANGE_BROKER_HA_INFO (906),
// and a master tells a slave its own with it.
const (
	GetBrokerMemberGroup    int32 = 901
	NotifyMinBrokerIDChange int32 = 905
	ExchangeBrokerHAInfo    int32 = 906
)

// ExchangeHAInfoHeader is EXCHANGE_BROKER_HA_INFO's request header
// (ExchangeHAInfoRequestHeader) and its answer's (ExchangeHAInfoResponse-
// Header): the same three nullable fields. A request without
// masterHaAddress asks the receiver for its HA info; one with it sets the
// receiver's master.
type ExchangeHAInfoHeader struct {
	MasterHAAddress   string
	MasterFlushOffset *int64
	MasterAddress     string
}

func (r *ExchangeHAInfoHeader) decodeHeader(h *Header) {
	r.MasterHAAddress = h.Str("masterHaAddress", false)
	r.MasterFlushOffset = h.OptInt64("masterFlushOffset")
	r.MasterAddress = h.Str("masterAddress", false)
}

// Fields returns the header as extFields (null fields left out).
func (r *ExchangeHAInfoHeader) Fields() map[string]string {
	m := make(map[string]string, 3)
	putI64(m, "masterFlushOffset", r.MasterFlushOffset)
	if r.MasterHAAddress != "" {
		m["masterHaAddress"] = r.MasterHAAddress
	}
	if r.MasterAddress != "" {
		m["masterAddress"] = r.MasterAddress
	}
	return m
}

// GetBrokerMemberGroupRequestHeader is GET_BROKER_MEMBER_GROUP's.
type GetBrokerMemberGroupRequestHeader struct {
	ClusterName, BrokerName string
}

func (r *GetBrokerMemberGroupRequestHeader) decodeHeader(h *Header) {
	r.ClusterName = h.Str("clusterName", true)
	r.BrokerName = h.Str("brokerName", true)
}

// Fields returns the header as extFields.
func (r *GetBrokerMemberGroupRequestHeader) Fields() map[string]string {
	return map[string]string{"clusterName": r.ClusterName, "brokerName": r.BrokerName}
}

// GetBrokerMemberGroupResponseBody is GET_BROKER_MEMBER_GROUP's answer.
type GetBrokerMemberGroupResponseBody struct {
	BrokerMemberGroup *BrokerMemberGroup `json:"brokerMemberGroup"`
}

// Encode writes the body as fastjson does (brokerAddrs with bare Long keys).
func (r *GetBrokerMemberGroupResponseBody) Encode() []byte {
	b := []byte{'{'}
	if r.BrokerMemberGroup != nil {
		b = append(b, `"brokerMemberGroup":`...)
		b = r.BrokerMemberGroup.appendTo(b)
	}
	return append(b, '}')
}

// DecodeGetBrokerMemberGroupResponseBody reads the answer (bare or quoted
// Long keys).
func DecodeGetBrokerMemberGroupResponseBody(b []byte) (*GetBrokerMemberGroupResponseBody, error) {
	var r GetBrokerMemberGroupResponseBody
	if err := fastjson.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// NotifyMinBrokerIDChangeRequestHeader is NOTIFY_MIN_BROKER_ID_CHANGE's
// (NotifyMinBrokerIdChangeRequestHeader: every field nullable).
type NotifyMinBrokerIDChangeRequestHeader struct {
	MinBrokerID                                                *int64
	BrokerName, MinBrokerAddr, OfflineBrokerAddr, HABrokerAddr string
}

func (r *NotifyMinBrokerIDChangeRequestHeader) decodeHeader(h *Header) {
	r.MinBrokerID = h.OptInt64("minBrokerId")
	r.BrokerName = h.Str("brokerName", false)
	r.MinBrokerAddr = h.Str("minBrokerAddr", false)
	r.OfflineBrokerAddr = h.Str("offlineBrokerAddr", false)
	r.HABrokerAddr = h.Str("haBrokerAddr", false)
}

// Fields returns the header as extFields (null fields left out).
func (r *NotifyMinBrokerIDChangeRequestHeader) Fields() map[string]string {
	m := make(map[string]string, 5)
	putI64(m, "minBrokerId", r.MinBrokerID)
	for k, v := range map[string]string{"brokerName": r.BrokerName, "minBrokerAddr": r.MinBrokerAddr,
		"offlineBrokerAddr": r.OfflineBrokerAddr, "haBrokerAddr": r.HABrokerAddr} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// optBool reads a nullable Boolean field: nil when absent or empty.
func optBool(h *Header, key string) *bool {
	v, ok := h.ext[key]
	if !ok || v == "" {
		return nil
	}
	b, _ := strconv.ParseBool(v)
	return &b
}
