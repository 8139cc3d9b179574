package migrate

// Step names a step of the workflow: the reshard verb that runs it, and
// the "step" of its log records, errors and Run's OnStep.
type Step string

// The steps.
const (
	StepCreate     Step = "create"
	StepDualWrites Step = "dual-writes"
	StepBackfill   Step = "backfill"
	StepVerify     Step = "verify"
	StepRepair     Step = "repair"
	StepCutover    Step = "cutover"
	StepRollback   Step = "rollback"
	StepComplete   Step = "complete"
	StepCancel     Step = "cancel"
	StepRun        Step = "run"
	// StepRetire is the deletion of the index a finished migration left
	// behind, part of complete and cancel.
	StepRetire Step = "retire"
)
