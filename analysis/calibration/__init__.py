"""Calibration: the simulated machines' costs against the hardware they imitate (issue 16).

  published.toml, published.py   the hardware's figures, each with its source
  measured.py                    calibration ROIs (workloads/tc_cal_*.c) -> named measurements
  table.py                       the table per machine (results/calibration/<machine>.csv)
  section.py                     its section of the report
"""
