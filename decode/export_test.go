package decode

// AppendDecimal is appendDecimal, for the tests of package decode_test.
var AppendDecimal = appendDecimal
