# Runs plot.py on a fixture run and fails unless every expected figure is written.
file(REMOVE_RECURSE ${OUT})
execute_process(COMMAND ${PYTHON} ${SCRIPT} ${RUN} --out ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "plot.py exited with ${rc}")
endif()
# The kbit rows' set (the envelope needs an auto row), then the AWQ problems' own set.
foreach(fig speedup_k4 time_vs_m_k4 roofline_k4 check_margin_k4 envelope_k4 speedup_awq_g128
    time_vs_m_awq_g128 roofline_awq_g128 check_margin_awq_g128)
  if(NOT EXISTS ${OUT}/${fig}_fp16_cold.png)
    message(FATAL_ERROR "plot.py did not write ${fig}_fp16_cold.png")
  endif()
  file(SIZE ${OUT}/${fig}_fp16_cold.png sz)
  if(sz LESS 5000)
    message(FATAL_ERROR "${fig}_fp16_cold.png is only ${sz} bytes")
  endif()
endforeach()
execute_process(COMMAND ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/check_plot_groups.py
  ${CMAKE_CURRENT_LIST_DIR}/../../harness ${RUN} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "plot.py mixes the kbit and AWQ problems' rows (check_plot_groups.py)")
endif()
message(STATUS "all figures written to ${OUT}")
