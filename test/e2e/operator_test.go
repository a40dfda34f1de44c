//go:build e2e

package e2e

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestOperator runs the scenarios in a fixed order: the least-privilege
// check reads the audit log of everything the operator did before it.
func TestOperator(t *testing.T) {
	RegisterTestingT(t)
	scenarios := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"TutorialFlow", testTutorialFlow},
		{"ScaleSubresourceAndPrinterColumns", testScaleSubresource},
		{"PodSecurityRestricted", testPodSecurityRestricted},
		{"TemplatePodsEqualADeployments", testTemplatePodsEqualADeployments},
		{"ManagerDeploymentAdmittedUnderRestricted", testManagerDeploymentAdmitted},
		{"HandDeletedPodsAreReplacedExactly", testHandDeletedPods},
		{"OperatorKilledMidScale", testOperatorKilledMidScale},
		{"RelabelledPodIsReleasedThenAdopted", testReleaseAndAdopt},
		{"RecreatedAfterOrphaningDeleteKeepsItsPods", testRecreateAfterOrphaningDelete},
		{"RollingUpdateWithinBoundsOperatorKilled", testRollingUpdate},
		{"RecreateNeverRunsTwoRevisionsOperatorKilled", testRecreate},
		{"TerminationCompleteKeepsTheBoundByTheAuditLog", testTerminationComplete},
		{"NamedPodsRemovedFirstByTheAuditLog", testNamedPods},
		{"RolloutPluginVerbs", testRolloutPluginVerbs},
		{"UpgradeFromV010TouchesNoPod", testUpgradeFromV010},
		{"LeastPrivilege", testLeastPrivilege},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			RegisterTestingT(t)
			Expect(env.operator.running()).To(BeTrue(), "the operator process is not running")
			s.fn(t)
		})
	}
}
