<?php

declare(strict_types=1);

namespace Posthorn\Model;

class AttemptCounts extends Model
{
    public int $succeeded;
    public int $failed;
    public int $dead_letter;
}
