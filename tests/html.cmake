# report.html in a real browser (tests/html/report_html_test.py): headless Chromium through
# Selenium loads a tiny study's page and two qkt train runs' page from file:// and checks
# them against metrics.csv and log.csv, then requires a planted fault (a series dropped from
# each page) to be caught, and that Chromium left nothing in the temporary directory (its
# TMPDIR is the test's work directory). Debian's chromium, chromium-driver and python3-selenium (.ci/run
# installs them); the script exits 77 with a SKIP line when one is missing, as the PyTorch
# cross-check does. Screenshots for the docs: scripts/report_html_shots.sh.
set(QKT_BROWSER_PYTHON /usr/bin/python3 CACHE FILEPATH "Python interpreter with selenium for the browser test")
if(EXISTS ${QKT_BROWSER_PYTHON})
  add_test(NAME report_html_browser
           COMMAND ${QKT_BROWSER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/html/report_html_test.py $<TARGET_FILE:qkt>
                   ${PROJECT_BINARY_DIR}/report_html_test)
else()
  add_test(NAME report_html_browser
           COMMAND sh -c "echo 'SKIP: ${QKT_BROWSER_PYTHON} not found, so the browser test of report.html cannot run'; exit 77")
endif()
set_tests_properties(report_html_browser PROPERTIES SKIP_RETURN_CODE 77 LABELS "unit;browser" TIMEOUT 180
                     ENVIRONMENT "OMP_NUM_THREADS=2")
