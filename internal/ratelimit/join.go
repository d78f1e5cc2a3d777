package ratelimit

import "time"

// The join endpoints' limits: a node fetches its script once and reports
// about ten steps; a fleet joining behind one NAT address needs headroom.
var (
	JoinScriptPerIP = Rule{"join-script-ip", 120, 15 * time.Minute}
	JoinEventsPerIP = Rule{"join-events-ip", 1200, 15 * time.Minute}
)
