# test_ops_f32 compares against the float64 outputs that test_gc_ops writes.
set_tests_properties(test_gc_ops PROPERTIES FIXTURES_SETUP op_forward_f64)
set_tests_properties(test_ops_f32 PROPERTIES FIXTURES_REQUIRED op_forward_f64)
