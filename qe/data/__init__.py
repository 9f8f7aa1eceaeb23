from qe.data.record import Record, load_records, records_from_dicts, save_records
from qe.data.datasets import load_dataset

__all__ = ["Record", "load_dataset", "load_records", "records_from_dicts", "save_records"]
