package remoting

import "strconv"

// Controller headers (5.3.3 remoting/protocol/header/controller/**,
// header/namesrv/BrokerHeartbeatRequestHeader.java,
// header/NotifyBrokerRoleChangedRequestHeader.java). Java's Long and
// Integer fields without @CFNotNull are null when absent: the ones whose
// absence a stock handler tells apart are pointers here; the rest read as
// 0 (or -1 where the stock default is -1).

// BrokerHeartbeatRequestHeader is BROKER_HEARTBEAT's (sent to the
// controller by a broker in controller mode, and to the name server).
type BrokerHeartbeatRequestHeader struct {
	ClusterName, BrokerAddr, BrokerName string
	BrokerID                            *int64
	Epoch                               *int32
	MaxOffset, ConfirmOffset            *int64
	HeartbeatTimeoutMills               *int64
	ElectionPriority                    *int32
}

// extOf returns c's custom fields, made when c has none yet.
func extOf(c *Command) map[string]string {
	if c.Ext() == nil {
		c.ExtFields = make(map[string]string, 4)
	}
	return c.ExtFields
}

func optInt32(h *Header, key string) *int32 {
	if v, ok := h.ext[key]; !ok || v == "" {
		return nil
	}
	n := h.Int32(key, false, 0)
	return &n
}

func (r *BrokerHeartbeatRequestHeader) decodeHeader(h *Header) {
	r.ClusterName = h.Str("clusterName", true)
	r.BrokerAddr = h.Str("brokerAddr", true)
	r.BrokerName = h.Str("brokerName", true)
	r.BrokerID = h.OptInt64("brokerId")
	r.Epoch = optInt32(h, "epoch")
	r.MaxOffset = h.OptInt64("maxOffset")
	r.ConfirmOffset = h.OptInt64("confirmOffset")
	r.HeartbeatTimeoutMills = h.OptInt64("heartbeatTimeoutMills")
	r.ElectionPriority = optInt32(h, "electionPriority")
}

// Fields returns the header as extFields (nullable fields when set).
func (r *BrokerHeartbeatRequestHeader) Fields() map[string]string {
	m := map[string]string{"clusterName": r.ClusterName, "brokerAddr": r.BrokerAddr, "brokerName": r.BrokerName}
	putI64(m, "brokerId", r.BrokerID)
	putI32(m, "epoch", r.Epoch)
	putI64(m, "maxOffset", r.MaxOffset)
	putI64(m, "confirmOffset", r.ConfirmOffset)
	putI64(m, "heartbeatTimeoutMills", r.HeartbeatTimeoutMills)
	putI32(m, "electionPriority", r.ElectionPriority)
	return m
}

func putI64(m map[string]string, k string, v *int64) {
	if v != nil {
		m[k] = i64(*v)
	}
}

func putI32(m map[string]string, k string, v *int32) {
	if v != nil {
		m[k] = i32(*v)
	}
}

// AlterSyncStateSetRequestHeader is CONTROLLER_ALTER_SYNC_STATE_SET's; the
// body is a SyncStateSet.
type AlterSyncStateSetRequestHeader struct {
	BrokerName     string
	MasterBrokerID *int64
	MasterEpoch    *int32
	InvokeTime     int64
}

func (r *AlterSyncStateSetRequestHeader) decodeHeader(h *Header) {
	r.BrokerName = h.Str("brokerName", false)
	r.MasterBrokerID = h.OptInt64("masterBrokerId")
	r.MasterEpoch = optInt32(h, "masterEpoch")
	r.InvokeTime = h.Int64("invokeTime", false, 0)
}

// Fields returns the header as extFields.
func (r *AlterSyncStateSetRequestHeader) Fields() map[string]string {
	m := map[string]string{"brokerName": r.BrokerName, "invokeTime": i64(r.InvokeTime)}
	putI64(m, "masterBrokerId", r.MasterBrokerID)
	putI32(m, "masterEpoch", r.MasterEpoch)
	return m
}

// ElectMasterRequestHeader is CONTROLLER_ELECT_MASTER's: BrokerID -1 is an
// election the controller triggers itself (ofControllerTrigger), and
// DesignateElect asks for BrokerID to become master (mqadmin electMaster).
type ElectMasterRequestHeader struct {
	ClusterName, BrokerName string
	BrokerID                int64
	DesignateElect          bool
	InvokeTime              int64
}

func (r *ElectMasterRequestHeader) decodeHeader(h *Header) {
	r.ClusterName = h.Str("clusterName", true)
	r.BrokerName = h.Str("brokerName", true)
	r.BrokerID = h.Int64("brokerId", true, -1)
	if !h.Has("designateElect") && h.err == nil {
		h.err = missingFieldError("designateElect")
	}
	r.DesignateElect = h.Bool("designateElect")
	r.InvokeTime = h.Int64("invokeTime", false, 0)
}

// Fields returns the header as extFields.
func (r *ElectMasterRequestHeader) Fields() map[string]string {
	return map[string]string{
		"clusterName": r.ClusterName, "brokerName": r.BrokerName, "brokerId": i64(r.BrokerID),
		"designateElect": strconv.FormatBool(r.DesignateElect), "invokeTime": i64(r.InvokeTime),
	}
}

// ElectMasterResponseHeader is the header of CONTROLLER_ELECT_MASTER's
// answer; RegisterBrokerToControllerResponseHeader and
// NotifyBrokerRoleChangedRequestHeader carry the same master fields.
type ElectMasterResponseHeader struct {
	MasterBrokerID    *int64
	MasterAddress     string
	MasterEpoch       *int32
	SyncStateSetEpoch *int32
}

func (r *ElectMasterResponseHeader) decodeHeader(h *Header) {
	r.MasterBrokerID = h.OptInt64("masterBrokerId")
	r.MasterAddress = h.Str("masterAddress", false)
	r.MasterEpoch = optInt32(h, "masterEpoch")
	r.SyncStateSetEpoch = optInt32(h, "syncStateSetEpoch")
}

// Encode writes the set fields into c's custom fields.
func (r *ElectMasterResponseHeader) Encode(c *Command) { r.put(extOf(c)) }

// Fields returns the header as extFields (NOTIFY_BROKER_ROLE_CHANGED's).
func (r *ElectMasterResponseHeader) Fields() map[string]string {
	m := map[string]string{}
	r.put(m)
	return m
}

func (r *ElectMasterResponseHeader) put(m map[string]string) {
	putI64(m, "masterBrokerId", r.MasterBrokerID)
	setIf(m, "masterAddress", r.MasterAddress)
	putI32(m, "masterEpoch", r.MasterEpoch)
	putI32(m, "syncStateSetEpoch", r.SyncStateSetEpoch)
}

// BrokerNameRequestHeader is CONTROLLER_GET_REPLICA_INFO's
// (GetReplicaInfoRequestHeader).
type BrokerNameRequestHeader struct{ BrokerName string }

func (r *BrokerNameRequestHeader) decodeHeader(h *Header) { r.BrokerName = h.Str("brokerName", false) }

// Fields returns the header as extFields.
func (r *BrokerNameRequestHeader) Fields() map[string]string {
	return map[string]string{"brokerName": r.BrokerName}
}

// GetMetaDataResponseHeader is CONTROLLER_GET_METADATA_INFO's answer.
type GetMetaDataResponseHeader struct {
	Group                   string `json:"group"`
	ControllerLeaderID      string `json:"controllerLeaderId"`
	ControllerLeaderAddress string `json:"controllerLeaderAddress"`
	IsLeader                bool   `json:"isLeader"`
	Peers                   string `json:"peers"`
}

func (r *GetMetaDataResponseHeader) decodeHeader(h *Header) {
	r.Group = h.Str("group", false)
	r.ControllerLeaderID = h.Str("controllerLeaderId", false)
	r.ControllerLeaderAddress = h.Str("controllerLeaderAddress", false)
	r.IsLeader = h.Bool("isLeader")
	r.Peers = h.Str("peers", false)
}

// Encode writes the header into c's custom fields.
func (r *GetMetaDataResponseHeader) Encode(c *Command) {
	m := extOf(c)
	setIf(m, "group", r.Group)
	setIf(m, "controllerLeaderId", r.ControllerLeaderID)
	setIf(m, "controllerLeaderAddress", r.ControllerLeaderAddress)
	m["isLeader"] = strconv.FormatBool(r.IsLeader)
	setIf(m, "peers", r.Peers)
}

// CleanControllerBrokerDataRequestHeader is CLEAN_BROKER_DATA's;
// BrokerControllerIDsToClean is a ';'-separated id list.
type CleanControllerBrokerDataRequestHeader struct {
	ClusterName, BrokerName, BrokerControllerIDsToClean string
	IsCleanLivingBroker                                 bool
	InvokeTime                                          int64
}

func (r *CleanControllerBrokerDataRequestHeader) decodeHeader(h *Header) {
	r.ClusterName = h.Str("clusterName", false)
	r.BrokerName = h.Str("brokerName", true)
	r.BrokerControllerIDsToClean = h.Str("brokerControllerIdsToClean", false)
	r.IsCleanLivingBroker = h.Bool("isCleanLivingBroker")
	r.InvokeTime = h.Int64("invokeTime", false, 0)
}

// Fields returns the header as extFields.
func (r *CleanControllerBrokerDataRequestHeader) Fields() map[string]string {
	m := map[string]string{"brokerName": r.BrokerName, "isCleanLivingBroker": strconv.FormatBool(r.IsCleanLivingBroker), "invokeTime": i64(r.InvokeTime)}
	setIf(m, "clusterName", r.ClusterName)
	setIf(m, "brokerControllerIdsToClean", r.BrokerControllerIDsToClean)
	return m
}

// BrokerSetRequestHeader is CONTROLLER_GET_NEXT_BROKER_ID's
// (GetNextBrokerIdRequestHeader) and the cluster and broker names of the
// other registration headers.
type BrokerSetRequestHeader struct{ ClusterName, BrokerName string }

func (r *BrokerSetRequestHeader) decodeHeader(h *Header) {
	r.ClusterName, r.BrokerName = h.Str("clusterName", false), h.Str("brokerName", false)
}

// Fields returns the header as extFields.
func (r *BrokerSetRequestHeader) Fields() map[string]string {
	return map[string]string{"clusterName": r.ClusterName, "brokerName": r.BrokerName}
}

// ApplyBrokerIDRequestHeader is CONTROLLER_APPLY_BROKER_ID's;
// RegisterCheckCode is "ip:port;millis".
type ApplyBrokerIDRequestHeader struct {
	ClusterName, BrokerName string
	AppliedBrokerID         *int64
	RegisterCheckCode       string
}

func (r *ApplyBrokerIDRequestHeader) decodeHeader(h *Header) {
	r.ClusterName, r.BrokerName = h.Str("clusterName", false), h.Str("brokerName", false)
	r.AppliedBrokerID = h.OptInt64("appliedBrokerId")
	r.RegisterCheckCode = h.Str("registerCheckCode", false)
}

// Fields returns the header as extFields.
func (r *ApplyBrokerIDRequestHeader) Fields() map[string]string {
	m := map[string]string{"clusterName": r.ClusterName, "brokerName": r.BrokerName, "registerCheckCode": r.RegisterCheckCode}
	putI64(m, "appliedBrokerId", r.AppliedBrokerID)
	return m
}

// RegisterBrokerToControllerRequestHeader is CONTROLLER_REGISTER_BROKER's.
type RegisterBrokerToControllerRequestHeader struct {
	ClusterName, BrokerName string
	BrokerID                *int64
	BrokerAddress           string
	InvokeTime              int64
}

func (r *RegisterBrokerToControllerRequestHeader) decodeHeader(h *Header) {
	r.ClusterName, r.BrokerName = h.Str("clusterName", false), h.Str("brokerName", false)
	r.BrokerID = h.OptInt64("brokerId")
	r.BrokerAddress = h.Str("brokerAddress", false)
	r.InvokeTime = h.Int64("invokeTime", false, 0)
}

// Fields returns the header as extFields.
func (r *RegisterBrokerToControllerRequestHeader) Fields() map[string]string {
	m := map[string]string{"clusterName": r.ClusterName, "brokerName": r.BrokerName, "brokerAddress": r.BrokerAddress, "invokeTime": i64(r.InvokeTime)}
	putI64(m, "brokerId", r.BrokerID)
	return m
}

// ControllerReplyHeader is the header of the answers to
// CONTROLLER_GET_NEXT_BROKER_ID, CONTROLLER_APPLY_BROKER_ID,
// CONTROLLER_REGISTER_BROKER (the names of the broker set, and the master
// fields when known), CONTROLLER_GET_REPLICA_INFO (no names, no
// syncStateSetEpoch) and CONTROLLER_ALTER_SYNC_STATE_SET
// (newSyncStateSetEpoch).
type ControllerReplyHeader struct {
	ClusterName, BrokerName string
	NextBrokerID            *int64
	ElectMasterResponseHeader
	NewSyncStateSetEpoch *int32
}

func (r *ControllerReplyHeader) decodeHeader(h *Header) {
	r.ClusterName, r.BrokerName = h.Str("clusterName", false), h.Str("brokerName", false)
	r.NextBrokerID = h.OptInt64("nextBrokerId")
	r.ElectMasterResponseHeader.decodeHeader(h)
	r.NewSyncStateSetEpoch = optInt32(h, "newSyncStateSetEpoch")
}

// Encode writes the set fields into c's custom fields.
func (r *ControllerReplyHeader) Encode(c *Command) {
	m := extOf(c)
	setIf(m, "clusterName", r.ClusterName)
	setIf(m, "brokerName", r.BrokerName)
	putI64(m, "nextBrokerId", r.NextBrokerID)
	r.ElectMasterResponseHeader.put(m)
	putI32(m, "newSyncStateSetEpoch", r.NewSyncStateSetEpoch)
}

// NotifyBrokerRoleChangedRequestHeader is NOTIFY_BROKER_ROLE_CHANGED's, the
// controller's oneway to each live broker of a set after an election.
type NotifyBrokerRoleChangedRequestHeader = ElectMasterResponseHeader
