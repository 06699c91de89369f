package namesrv

import (
	"bytes"
	"errors"
	"os"
	"slices"

	"github.com/rmqio/rmq/conf"
	"github.com/rmqio/rmq/remoting"
)

// Name server config requests (J4 DefaultRequestProcessor.updateConfig and
// getConfig) and the unit topic lists.

// configBlackList are the keys UPDATE_NAMESRV_CONFIG refuses (NamesrvConfig's
// configBlackList default plus the ones the processor always adds).
var configBlackList = []string{"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"}

// config returns the options in force: those given to New, with the changes
// of UPDATE_NAMESRV_CONFIG.
func (s *Server) config() *Options {
	if o := s.live.Load(); o != nil {
		return o
	}
	return &s.opts
}

// getNamesrvConfig serves GET_NAMESRV_CONFIG: every config key as Java
// properties lines.
func (s *Server) getNamesrvConfig(req *remoting.Command) *remoting.Command {
	var body bytes.Buffer
	conf.Print(&body, s.config())
	return ok(req, body.Bytes())
}

// updateNamesrvConfig serves UPDATE_NAMESRV_CONFIG: the body is Java
// properties text. A blacklisted key refuses the whole update with
// NO_PERMISSION; unknown keys are ignored, as Java's Configuration.update
// ignores them. The new values are served at once (orderMessageEnable takes
// effect for the next route query, listenPort is only reported: nothing
// re-binds, as stock) and written to configStorePath, the -c file, so that
// the next start reads them (Java's Configuration.persist; rmq replaces
// only the changed keys' lines, conf.RewriteKeys).
func (s *Server) updateNamesrvConfig(req *remoting.Command) *remoting.Command {
	if len(req.Body) == 0 {
		return ok(req, nil)
	}
	keys, err := conf.ReadKeys(bytes.NewReader(req.Body))
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "string2Properties error")
	}
	for _, k := range keys {
		if slices.Contains(configBlackList, k) {
			return remoting.NewResponse(req, remoting.NoPermission, "Can not update config in black list.")
		}
	}
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	next := *s.config()
	warnings, err := conf.Load(bytes.NewReader(req.Body), "UPDATE_NAMESRV_CONFIG", &next)
	for _, w := range warnings {
		s.log.Info().Msg(w)
	}
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	s.live.Store(&next)
	s.log.Info().Strs("keys", keys).Msg("name server config updated")
	if err := persistConfig(next.ConfigStorePath, keys, &next); err != nil {
		// As Java's Configuration.persist: logged, the update stands.
		s.log.Error().Err(err).Str("file", next.ConfigStorePath).Msg("updateNamesrvConfig: config file not written")
	}
	return ok(req, nil)
}

// persistConfig writes the values of keys in o to path ("" writes nothing).
func persistConfig(path string, keys []string, o *Options) error {
	if path == "" {
		return nil
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return writeFileAtomic(path, conf.RewriteKeys(old, keys, o))
}

// TopicSysFlag bits (common/sysflag/TopicSysFlag.java).
const (
	topicSysFlagUnit    = 1 << 0
	topicSysFlagUnitSub = 1 << 1
)

// unitTopics lists the topics whose first queue data's topicSysFlag passes
// pick (RouteInfoManager.topicQueueTableIter), sorted.
func (m *RouteInfoManager) unitTopics(pick func(flag int32) bool) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := []string{}
	for topic, qds := range m.topicQueueTable {
		names := make([]string, 0, len(qds))
		for name := range qds {
			names = append(names, name)
		}
		if len(names) == 0 {
			continue
		}
		slices.Sort(names)
		if pick(qds[names[0]].TopicSysFlag) {
			out = append(out, topic)
		}
	}
	slices.Sort(out)
	return out
}

// unitTopicList serves GET_UNIT_TOPIC_LIST, GET_HAS_UNIT_SUB_TOPIC_LIST and
// GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST.
func (s *Server) unitTopicList(req *remoting.Command) *remoting.Command {
	var pick func(int32) bool
	switch req.Code {
	case remoting.GetUnitTopicList:
		pick = func(f int32) bool { return f&topicSysFlagUnit != 0 }
	case remoting.GetHasUnitSubTopicList:
		pick = func(f int32) bool { return f&topicSysFlagUnitSub != 0 }
	default:
		pick = func(f int32) bool { return f&topicSysFlagUnit == 0 && f&topicSysFlagUnitSub != 0 }
	}
	return ok(req, remoting.MarshalBody(remoting.TopicList{TopicList: s.routes.unitTopics(pick)}))
}
