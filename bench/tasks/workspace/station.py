"""Collect sensor readings and write the daily report."""

import csv


def read_sensor(name):
    # TODO: handle missing sensors
    with open(f"/sys/sensors/{name}") as handle:
        return float(handle.read())


def write_report(rows, path="report.txt"):
    with open(path, "w") as out:
        for row in rows:
            out.write(f"{row[0]}: {row[1]}\n")


def load_readings(path="data/readings.csv"):
    with open(path) as handle:
        return list(csv.reader(handle))
