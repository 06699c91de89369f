package controller

import (
	"fmt"
	"slices"

	"github.com/hashicorp/raft"

	"github.com/rmqio/rmq/remoting"
)

// processors maps every code the controller serves to its handler
// (ControllerRequestProcessor.handleRequest). UPDATE_CONTROLLER_CONFIG and
// GET_CONTROLLER_CONFIG are not served: the configuration is the file.
func (c *Controller) processors() map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command {
	return map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command{
		remoting.BrokerHeartbeat:             c.brokerHeartbeat,
		remoting.ControllerAlterSyncStateSet: func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return c.alterSyncStateSet(req) },
		remoting.ControllerElectMaster:       func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return c.electMasterCmd(req) },
		remoting.ControllerRegisterBroker:    func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return c.registerBroker(req) },
		remoting.ControllerGetReplicaInfo:    func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return c.getReplicaInfo(req) },
		remoting.ControllerGetMetadataInfo:   func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return c.getMetadata(req) },
		remoting.ControllerGetSyncStateData:  func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return c.getSyncStateData(req) },
		remoting.CleanBrokerData:             func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return c.cleanBrokerData(req) },
		remoting.ControllerGetNextBrokerID:   func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return c.getNextBrokerID(req) },
		remoting.ControllerApplyBrokerID:     func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return c.applyBrokerID(req) },
	}
}

// ServedCodes lists the request codes the controller serves, ascending.
func (c *Controller) ServedCodes() []int32 {
	codes := make([]int32, 0, len(c.handlers))
	for code := range c.handlers {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	return codes
}

// Serves reports whether code is a controller code (the name server hands
// these over when the controller runs inside it).
func (c *Controller) Serves(code int32) bool { _, ok := c.handlers[code]; return ok }

// ServeRemoting implements remoting.Handler.
func (c *Controller) ServeRemoting(conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	if !c.ready.Load() || c.stopped.Load() {
		// Started later than the name server it shares a port with, or
		// stopping: nobody leads here yet.
		return answer(req, result{}, errNotLeader)
	}
	if h := c.handlers[req.Code]; h != nil {
		return h(conn, req)
	}
	return remoting.NewResponse(req, remoting.RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", req.Code))
}

// answer turns a result, or the error of getting it, into the response:
// not the leader is CONTROLLER_NOT_LEADER with the stock remark; a log
// that would not take the events is SYSTEM_ERROR (stock cancels the
// future, and the remoting layer answers the exception).
func answer(req *remoting.Command, res result, err error) *remoting.Command {
	if err == errNotLeader {
		return remoting.NewResponse(req, remoting.ControllerNotLeader, err.Error())
	}
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	resp := remoting.NewResponse(req, res.code, res.remark)
	if res.header != nil {
		res.header.Encode(resp)
	}
	resp.Body = res.body
	return resp
}

// notSet is the answer of a stock handler that returns
// createResponseCommand(null) for a request it does not act on.
func notSet(req *remoting.Command) *remoting.Command {
	return remoting.NewResponse(req, remoting.SystemError, "not set any response code")
}

// brokerHeartbeat is handleBrokerHeartbeat: any node records it.
func (c *Controller) brokerHeartbeat(conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := remoting.DecodeHeader[remoting.BrokerHeartbeatRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	if h.BrokerID == nil {
		return remoting.NewResponse(req, remoting.ControllerInvalidRequest, "Heart beat with empty brokerId")
	}
	var id uint64
	if conn != nil {
		id = conn.ID()
		c.conns.Store(id, conn)
	}
	c.hb.heartbeat(h.ClusterName, h.BrokerName, h.BrokerAddr, *h.BrokerID, h.HeartbeatTimeoutMills, id,
		h.Epoch, h.MaxOffset, h.ConfirmOffset, h.ElectionPriority)
	return remoting.NewResponse(req, remoting.Success, "Heart beat success")
}

func (c *Controller) alterSyncStateSet(req *remoting.Command) *remoting.Command {
	h, err := remoting.DecodeHeader[remoting.AlterSyncStateSetRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	set, err := remoting.DecodeSyncStateSet(req.Body)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	res, err := c.propose(func(st *state) result { return st.alterSyncStateSet(&h, set, c.hb) })
	return answer(req, res, err)
}

func (c *Controller) electMasterCmd(req *remoting.Command) *remoting.Command {
	h, err := remoting.DecodeHeader[remoting.ElectMasterRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	res, err := c.electMaster(&h)
	return answer(req, res, err)
}

func (c *Controller) registerBroker(req *remoting.Command) *remoting.Command {
	h, err := remoting.DecodeHeader[remoting.RegisterBrokerToControllerRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	res, err := c.propose(func(st *state) result { return st.registerBroker(&h, c.hb) })
	return answer(req, res, err)
}

func (c *Controller) getReplicaInfo(req *remoting.Command) *remoting.Command {
	h, err := remoting.DecodeHeader[remoting.BrokerNameRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	res, err := c.read(func(st *state) result { return st.getReplicaInfo(h.BrokerName) })
	return answer(req, res, err)
}

// getMetadata is handleControllerGetMetadataInfo: every node answers.
func (c *Controller) getMetadata(req *remoting.Command) *remoting.Command {
	id, addr, peers := c.leaderInfo()
	resp := remoting.NewResponse(req, remoting.Success, "")
	(&remoting.GetMetaDataResponseHeader{Group: c.group, ControllerLeaderID: id, ControllerLeaderAddress: addr,
		IsLeader: c.raft.State() == raft.Leader, Peers: peers}).Encode(resp)
	return resp
}

func (c *Controller) getSyncStateData(req *remoting.Command) *remoting.Command {
	if len(req.Body) == 0 {
		return notSet(req)
	}
	names, err := remoting.DecodeBrokerNames(req.Body)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	if len(names) == 0 {
		return notSet(req)
	}
	res, err := c.read(func(st *state) result { return st.getSyncStateData(names, c.hb) })
	return answer(req, res, err)
}

func (c *Controller) cleanBrokerData(req *remoting.Command) *remoting.Command {
	h, err := remoting.DecodeHeader[remoting.CleanControllerBrokerDataRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	res, err := c.propose(func(st *state) result { return st.cleanBrokerData(&h, c.hb) })
	return answer(req, res, err)
}

func (c *Controller) getNextBrokerID(req *remoting.Command) *remoting.Command {
	h, err := remoting.DecodeHeader[remoting.BrokerSetRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	res, err := c.read(func(st *state) result { return st.getNextBrokerID(&h) })
	return answer(req, res, err)
}

func (c *Controller) applyBrokerID(req *remoting.Command) *remoting.Command {
	h, err := remoting.DecodeHeader[remoting.ApplyBrokerIDRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	res, err := c.propose(func(st *state) result { return st.applyBrokerID(&h) })
	return answer(req, res, err)
}
