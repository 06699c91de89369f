package remoting

// DeleteExpiredCommitLog (DELETE_EXPIRED_COMMITLOG, RequestCode.java) makes
// the next 20 cleanup rounds run whatever the hour
// (executeDeleteFilesManually). CLEAN_EXPIRED_CONSUMEQUEUE (306) is in
// codes_admin.go.
const DeleteExpiredCommitLog int32 = 329
