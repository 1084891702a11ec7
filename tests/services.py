"""`python -m tests.services DATABASE_URL REDIS_URL`: check that the scale-out pass's
PostgreSQL and Redis answer, before `make test` runs it. A missing service fails the run with
the reason; no test is ever skipped for it."""

import sys

NEEDED = "PostgreSQL and Redis on 127.0.0.1 are needed for the scale-out configuration"


def main(database_url, redis_url):
    import psycopg
    import redis

    problems = []
    try:
        psycopg.connect(database_url, connect_timeout=5).close()
    except psycopg.Error as error:
        problems.append(f"PostgreSQL at {database_url} does not answer: {' '.join(str(error).split())}")
    try:
        redis.Redis.from_url(redis_url, socket_timeout=5, socket_connect_timeout=5).ping()
    except redis.RedisError as error:
        problems.append(f"Redis at {redis_url} does not answer: {error}")
    if problems:
        print(f"{NEEDED} (make test runs the whole suite on both configurations):", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        print("Start them (on this machine kind they run before each session and in CI), or point "
              "TEST_DATABASE_URL / TEST_REDIS_URL at others.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
