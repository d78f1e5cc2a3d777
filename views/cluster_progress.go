package views

// ProgressStep is one step of a cluster's provisioning as the page shows
// it: its label's message ID and its state ("done", "current", "failed"
// or "todo").
type ProgressStep struct {
	Label string
	State string
}

// provisionSteps works out where a cluster being made is, from its status
// and the reasons its events gave: requested, the control plane installed on
// the host, the control plane answering (and its join side made), ready.
// The step the cluster is at is "current", or "failed" when the cluster
// failed there; a ready cluster has every step done.
func provisionSteps(status string, reasons []string) []ProgressStep {
	seen := map[string]bool{}
	for _, r := range reasons {
		seen[r] = true
	}
	done := []bool{
		true,
		seen["Installing"] || seen["Upgrading"] || seen["WaitingForControlPlane"] || seen["WaitingForLoadBalancer"] || seen["Ready"],
		seen["Ready"],
		status == "ready" || seen["Ready"],
	}
	labels := []string{"ClusterStepRequested", "ClusterStepInstall", "ClusterStepStart", "ClusterStepReady"}
	steps := make([]ProgressStep, len(labels))
	at := -1
	for i := range labels {
		steps[i] = ProgressStep{Label: labels[i], State: "todo"}
		if done[i] {
			steps[i].State = "done"
		} else if at < 0 {
			at = i
		}
	}
	if at >= 0 {
		steps[at].State = "current"
		if status == "failed" {
			steps[at].State = "failed"
		}
	}
	return steps
}

// showsProgress reports whether the cluster page shows its provisioning
// steps: while it is made, and when it failed before it was ever ready.
func showsProgress(status string, reasons []string) bool {
	switch status {
	case "pending", "provisioning":
		return true
	case "failed", ClusterStatusRetrying:
		for _, r := range reasons {
			if r == "Ready" {
				return false
			}
		}
		return true
	}
	return false
}
