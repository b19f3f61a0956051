// The harness (process runner, temporary directories, deadlines) comes with the fixtures: a unit test file
// imports one module for both.
@_exported import VPNProvTestHarness
