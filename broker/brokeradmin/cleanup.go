package brokeradmin

import (
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// RetentionProcessors maps the retention admin requests (AdminBrokerProcessor
// deleteExpiredCommitLog, cleanExpiredConsumeQueue); both answer SUCCESS with
// no remark, as stock.
func (s *Service) RetentionProcessors() map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command {
	return map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command{
		remoting.DeleteExpiredCommitLog:   s.processDeleteExpiredCommitLog,
		remoting.CleanExpiredConsumeQueue: s.processCleanExpiredConsumeQueue,
	}
}

// processDeleteExpiredCommitLog serves DELETE_EXPIRED_COMMITLOG: the next
// cleanup rounds run whatever deleteWhen says; files must still be expired
// unless the disk is over diskSpaceCleanForciblyRatio.
func (s *Service) processDeleteExpiredCommitLog(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	s.log.Warn().Msg("admin: delete expired commitlog files manually")
	s.store.DeleteExpiredFilesManually()
	return remoting.NewResponse(req, remoting.Success, "")
}

// processCleanExpiredConsumeQueue serves CLEAN_EXPIRED_CONSUMEQUEUE: consume
// queues wholly below the commitlog minimum are destroyed; the delay topic's
// are kept, as stock.
func (s *Service) processCleanExpiredConsumeQueue(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	n := s.store.CleanExpiredConsumeQueues(func(topic string) bool { return topic == message.TopicSchedule })
	s.log.Warn().Int("queues", n).Msg("admin: expired consume queues cleaned")
	return remoting.NewResponse(req, remoting.Success, "")
}
