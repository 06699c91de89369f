package brokeradmin

import (
	"github.com/rmqio/rmq/remoting"
)

// processQueryMessage serves QUERY_MESSAGE: the stored records of topic whose
// KEYS or UNIQ_KEY contain key, stored within [beginTimestamp,
// endTimestamp], concatenated in commitlog order (the pull body format). The
// header tells how far the index reaches; nothing found is QUERY_NOT_FOUND.
func (s *Service) processQueryMessage(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.QueryMessageRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	topic, key, maxNum, begin, end := hd.Topic, hd.Key, hd.MaxNum, hd.BeginTimestamp, hd.EndTimestamp
	if hd.UniqueKeyFlag {
		maxNum = int32(s.defaultQueryMaxNum())
	}
	res, err := s.store.QueryMessage(topic, key, int(maxNum), begin, end)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "query message: "+err.Error())
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	(&remoting.QueryMessageResponseHeader{
		IndexLastUpdateTimestamp: res.IndexLastUpdateTimestamp, IndexLastUpdatePhyoffset: res.IndexLastUpdatePhyOffset,
	}).Encode(resp)
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
