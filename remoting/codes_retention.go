package remoting

// Request codes of the retention admin requests (RequestCode.java).
const (
	// CleanExpiredConsumeQueue (CLEAN_EXPIRED_CONSUMEQUEUE) destroys the
	// consume queues whose every unit points below the commitlog minimum.
	CleanExpiredConsumeQueue int32 = 306
	// DeleteExpiredCommitLog (DELETE_EXPIRED_COMMITLOG) makes the next 20
	// cleanup rounds run whatever the hour (executeDeleteFilesManually).
	DeleteExpiredCommitLog int32 = 329
)
