<?php

declare(strict_types=1);

namespace Posthorn\Model;

class EventAccepted extends Model
{
    public string $id;
    public int $deliveries;
}
