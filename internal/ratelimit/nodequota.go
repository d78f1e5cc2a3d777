package ratelimit

import "time"

// NodeQuotaReviewsPerCluster bounds the calls to one cluster's node quota
// webhook. Each Node creation asks once, and a kubelet the quota refused
// asks again about every 7 seconds; the limit lets a fleet join at once
// and dozens of refused machines retry.
var NodeQuotaReviewsPerCluster = Rule{"node-quota-review-cluster", 600, time.Minute}
