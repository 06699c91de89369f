package brokeradmin

import (
	"github.com/rmqio/rmq/remoting"
)

// uniqueKeyQueryFlag is MixAll.UNIQUE_MSG_QUERY_FLAG, the ext field a client
// sets when it looks a message up by its client id (UNIQ_KEY).
const uniqueKeyQueryFlag = "_UNIQUE_KEY_QUERY"

// processQueryMessage serves QUERY_MESSAGE: the stored records of topic whose
// KEYS or UNIQ_KEY contain key, stored within [beginTimestamp,
// endTimestamp], concatenated in commitlog order (the pull body format). The
// header tells how far the index reaches; nothing found is QUERY_NOT_FOUND.
func (s *Service) processQueryMessage(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h := req.Header()
	topic := h.Str("topic", true)
	key := h.Str("key", true)
	maxNum := h.Int32("maxNum", true, 0)
	begin := h.Int64("beginTimestamp", true, 0)
	end := h.Int64("endTimestamp", true, 0)
	if err := h.Err(); err != nil {
		return remoting.ErrorResponse(req, err)
	}
	if req.Ext()[uniqueKeyQueryFlag] == "true" {
		maxNum = int32(s.defaultQueryMaxNum())
	}
	res, err := s.store.QueryMessage(topic, key, int(maxNum), begin, end)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "query message: "+err.Error())
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.SetExtInt("indexLastUpdateTimestamp", res.IndexLastUpdateTimestamp)
	resp.SetExtInt("indexLastUpdatePhyoffset", res.IndexLastUpdatePhyOffset)
	if len(res.Messages) == 0 {
		resp.Code, resp.Remark = remoting.QueryNotFound, "can not find message, maybe time range not correct"
		return resp
	}
	n := 0
	for _, m := range res.Messages {
		n += len(m)
	}
	body := make([]byte, 0, n)
	for _, m := range res.Messages {
		body = append(body, m...)
	}
	resp.Body = body
	return resp
}
