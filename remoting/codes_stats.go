package remoting

// Request codes served by rmq that the other code files do not name: the
// 5.x timer admin requests and two stats requests (RequestCode.java).
const (
	GetTimerCheckPoint  int32 = 60
	GetTimerMetrics     int32 = 61
	ViewBrokerStatsData int32 = 315
	GetAllProducerInfo  int32 = 328
)
