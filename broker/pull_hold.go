package broker

// PullRequestHoldService parks long-polling pulls. Owned by the broker-core work.
type PullRequestHoldService struct{}
