package remoting

import (
	"errors"
	"slices"
	"strconv"

	"github.com/rmqio/rmq/internal/fastjson"
)

// Controller bodies (5.3.3 remoting/protocol/body: SyncStateSet,
// ElectMasterResponseBody, BrokerMemberGroup, BrokerReplicasInfo). The
// controller writes them as fastjson does (getters in alphabetical order,
// null fields left out, Map<Long,String> keys bare, a HashSet<Long> of
// broker ids in ascending order, which is how a small-Long HashSet
// iterates); they are read with fastjson.Unmarshal, which takes both key
// forms.

// MaxControllerBody bounds a controller request body (a sync state set, a
// list of broker names): stock brokers send a few hundred bytes; a larger
// body is refused before it is parsed.
const MaxControllerBody = 1 << 20

// ErrControllerBodyTooLarge is the refusal of a body over MaxControllerBody.
var ErrControllerBodyTooLarge = errors.New("controller body larger than " + strconv.Itoa(MaxControllerBody) + " bytes")

// SyncStateSet is the body of ALTER_SYNC_STATE_SET (both ways),
// REGISTER_BROKER's and GET_REPLICA_INFO's answers and
// NOTIFY_BROKER_ROLE_CHANGED.
type SyncStateSet struct {
	SyncStateSet      []int64 `json:"syncStateSet"`
	SyncStateSetEpoch int32   `json:"syncStateSetEpoch"`
}

// Encode writes the body.
func (s *SyncStateSet) Encode() []byte {
	b := []byte(`{"syncStateSet":`)
	b = appendIDs(b, s.SyncStateSet)
	b = append(b, `,"syncStateSetEpoch":`...)
	b = strconv.AppendInt(b, int64(s.SyncStateSetEpoch), 10)
	return append(b, '}')
}

// DecodeSyncStateSet reads a SyncStateSet body; ids come back sorted and
// without repeats (a Java Set).
func DecodeSyncStateSet(body []byte) (SyncStateSet, error) {
	var s SyncStateSet
	if len(body) > MaxControllerBody {
		return s, ErrControllerBodyTooLarge
	}
	if len(body) == 0 {
		return s, errors.New("empty SyncStateSet body")
	}
	var raw struct {
		SyncStateSet      []int64 `json:"syncStateSet"`
		SyncStateSetEpoch int32   `json:"syncStateSetEpoch"`
	}
	if err := fastjson.Unmarshal(body, &raw); err != nil {
		return s, err
	}
	s.SyncStateSet = SortedIDs(raw.SyncStateSet)
	s.SyncStateSetEpoch = raw.SyncStateSetEpoch
	return s, nil
}

// DecodeBrokerNames reads GET_SYNC_STATE_DATA's body, a JSON list of
// broker names.
func DecodeBrokerNames(body []byte) ([]string, error) {
	if len(body) > MaxControllerBody {
		return nil, ErrControllerBodyTooLarge
	}
	var names []string
	if err := fastjson.Unmarshal(body, &names); err != nil {
		return nil, err
	}
	return names, nil
}

// EncodeBrokerNames writes GET_SYNC_STATE_DATA's request body.
func EncodeBrokerNames(names []string) []byte {
	b := []byte{'['}
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = fastjson.AppendString(b, n)
	}
	return append(b, ']')
}

// SortedIDs returns ids sorted, repeats removed (a new slice).
func SortedIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

func appendIDs(b []byte, ids []int64) []byte {
	b = append(b, '[')
	for i, id := range SortedIDs(ids) {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return append(b, ']')
}

// BrokerMemberGroup is a broker set's members (ElectMasterResponseBody,
// GET_BROKER_MEMBER_GROUP).
type BrokerMemberGroup struct {
	Cluster     string           `json:"cluster"`
	BrokerName  string           `json:"brokerName"`
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
}

func (g *BrokerMemberGroup) appendTo(b []byte) []byte {
	b = append(b, `{"brokerAddrs":{`...)
	ids := make([]int64, 0, len(g.BrokerAddrs))
	for id := range g.BrokerAddrs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = fastjson.AppendIntKey(b, id, false)
		b = append(b, ':')
		b = fastjson.AppendString(b, g.BrokerAddrs[id])
	}
	b = append(b, `},"brokerName":`...)
	b = fastjson.AppendString(b, g.BrokerName)
	b = append(b, `,"cluster":`...)
	b = fastjson.AppendString(b, g.Cluster)
	return append(b, '}')
}

// ElectMasterResponseBody is CONTROLLER_ELECT_MASTER's answer body.
type ElectMasterResponseBody struct {
	BrokerMemberGroup *BrokerMemberGroup `json:"brokerMemberGroup"`
	SyncStateSet      []int64            `json:"syncStateSet"`
}

// Encode writes the body (brokerMemberGroup only when set).
func (e *ElectMasterResponseBody) Encode() []byte {
	b := []byte{'{'}
	if e.BrokerMemberGroup != nil {
		b = append(b, `"brokerMemberGroup":`...)
		b = e.BrokerMemberGroup.appendTo(b)
		b = append(b, ',')
	}
	b = append(b, `"syncStateSet":`...)
	b = appendIDs(b, e.SyncStateSet)
	return append(b, '}')
}

// ReplicaIdentity is one broker of BrokerReplicasInfo.
type ReplicaIdentity struct {
	Alive         bool   `json:"alive"`
	BrokerAddress string `json:"brokerAddress"`
	BrokerID      int64  `json:"brokerId"`
	BrokerName    string `json:"brokerName"`
}

// ReplicasInfo is one broker set of BrokerReplicasInfo.
type ReplicasInfo struct {
	InSyncReplicas    []ReplicaIdentity `json:"inSyncReplicas"`
	MasterAddress     string            `json:"masterAddress,omitempty"`
	MasterBrokerID    *int64            `json:"masterBrokerId,omitempty"`
	MasterEpoch       int32             `json:"masterEpoch"`
	NotInSyncReplicas []ReplicaIdentity `json:"notInSyncReplicas"`
	SyncStateSetEpoch int32             `json:"syncStateSetEpoch"`
}

// BrokerReplicasInfo is GET_SYNC_STATE_DATA's answer body.
type BrokerReplicasInfo struct {
	ReplicasInfoTable map[string]*ReplicasInfo `json:"replicasInfoTable"`
}

// Encode writes the body; its fields are all strings, numbers and
// booleans, so standard JSON is fastjson's text (broker names sorted).
func (r *BrokerReplicasInfo) Encode() []byte { return MarshalBody(r) }

// DecodeBrokerReplicasInfo reads GET_SYNC_STATE_DATA's answer.
func DecodeBrokerReplicasInfo(body []byte) (*BrokerReplicasInfo, error) {
	var r BrokerReplicasInfo
	if err := fastjson.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// DecodeElectMasterResponseBody reads CONTROLLER_ELECT_MASTER's answer.
func DecodeElectMasterResponseBody(body []byte) (*ElectMasterResponseBody, error) {
	var e ElectMasterResponseBody
	if err := fastjson.Unmarshal(body, &e); err != nil {
		return nil, err
	}
	e.SyncStateSet = SortedIDs(e.SyncStateSet)
	return &e, nil
}

// EpochEntry is one entry of a broker's epoch file (5.3.3 EpochEntry);
// EndOffset is Long.MAX_VALUE for the last one as the broker sends it.
type EpochEntry struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"startOffset"`
	EndOffset   int64 `json:"endOffset"`
}

// EpochEntryCache is GET_BROKER_EPOCH_CACHE's answer body.
type EpochEntryCache struct {
	ClusterName string       `json:"clusterName"`
	BrokerName  string       `json:"brokerName"`
	BrokerID    int64        `json:"brokerId"`
	EpochList   []EpochEntry `json:"epochList"`
	MaxOffset   int64        `json:"maxOffset"`
}
