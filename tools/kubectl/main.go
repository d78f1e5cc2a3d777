// Command kubectl is what a user runs against their cluster in the
// real-node tests (the CLI's kubeconfig, merged into a machine's kube
// config), built from Kubernetes' Go modules as Kubernetes' own
// cmd/kubectl is.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
