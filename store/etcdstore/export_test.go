package etcdstore

// FeedMisses is how many reads of the recent log the feeds of this process
// could not answer (tests).
func FeedMisses() int64 { return feedMisses.Load() }
