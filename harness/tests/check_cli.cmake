# Runs EXE with ARGS ('|'-separated) and checks its exit code (RC), that its output (stdout and
# stderr together) matches the regular expression EXPECT and, when REFUSE is given, does not match
# REFUSE (e.g. a table header that must not be printed before an error).
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND ${EXE} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(REPLACE "|" " " shown "${ARGS}")
message("${EXE} ${shown}: exit ${rc}\n${out}")
if(NOT rc STREQUAL "${RC}")
  message(FATAL_ERROR "exit ${rc}, expected ${RC}")
endif()
if(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "the output does not match '${EXPECT}'")
endif()
if(REFUSE AND out MATCHES "${REFUSE}")
  message(FATAL_ERROR "the output matches '${REFUSE}', which it must not")
endif()
